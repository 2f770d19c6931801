# Session 20 round 3 (issue #4): 1. same-process A/B of the dK/dV loop's q/dO through TMA descriptors (dkdv_desc)
# and of the dQ kernel's pointer loads (dq_ptr, i.e. the committed dQ TMA switched off) on five rows; 2. the
# attention suite against torch varlen_attn and FlexAttention with the TMA forward and dQ kernel (same run).
# Call (kind nvidia-h100-x1): JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s20_round3.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 300 python3 benchmarks/src_variant_ab.py --family attention \
    --variants benchmarks/rounds/s20_variants.py --only dkdv_desc,dq_ptr --out $OUT --repeats 4 \
    --rows causal-mean8192-hkv4,skewed,causal-mean8192-hkv16,noncausal-mean2048,causal-mean2048-hkv4 \
    2>&1 | grep -v "^\[\|Warn\|warn" | tee $OUT/ab.log | cut -c1-170
echo "ab done $((SECONDS - T0)) s"
timeout $((580 - SECONDS + T0)) bash benchmarks/run_device.sh --family attention --backends triton,torch_varlen,flex \
    2>&1 | grep -v Warn | grep -E "^[a-z].*:|^  triton|^  flex|^  torch|geometric" | cut -c1-200
echo "elapsed $((SECONDS - T0)) s"
