# Session 20 round 4 (issue #4): the dK/dV loop's q/dO through TMA descriptors, adopted after round 3
# (bwd.dkdv_use_tma). 1. same-process A/B against its pointer loads (dkdv_ptr) on five rows; 2. the attention
# suite against torch varlen_attn and FlexAttention (same run); 3. every attention gpu test in 4 processes.
# Call (kind nvidia-h100-x1): JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s20_round4.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 200 python3 benchmarks/src_variant_ab.py --family attention \
    --variants benchmarks/rounds/s20_variants.py --only dkdv_ptr --out $OUT --repeats 4 \
    --rows causal-mean8192-hkv4,skewed,causal-mean8192-hkv16,noncausal-mean2048,causal-mean2048-hkv4 \
    2>&1 | grep -v "^\[\|Warn\|warn" | tee $OUT/ab.log | cut -c1-170
echo "ab done $((SECONDS - T0)) s"
timeout 200 bash benchmarks/run_device.sh --family attention --backends triton,torch_varlen,flex \
    2>&1 | grep -v Warn | grep -E "^[a-z].*:|^  triton|^  flex|^  torch|geometric" | cut -c1-200
echo "suite done $((SECONDS - T0)) s"
PYTHONPATH=src python3 benchmarks/gpu_tests_parallel.py --workers 4 --timeout $((585 - SECONDS + T0)) --out $OUT \
    tests/test_attention_triton.py 2>&1 | tail -8
echo "elapsed $((SECONDS - T0)) s"
