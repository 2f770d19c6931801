# Session 21 round 3 (issue #4): 1. dK/dV tiles with the TMA q/dO loads (benchmarks/rounds/s21_variants.py) on the
# rows still under 1.2x (skewed, non-causal) and one GQA row, same process; 2. the attention suite against torch
# varlen_attn and FlexAttention with round 1's schedule (mean 8192 on the 64x64 tile + TMA); 3. the attention gpu
# tests that cover the schedule and TMA paths (2 processes: 4 ran out of memory in session 20).
# Call (kind nvidia-h100-x1): JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s21_round3.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 170 python3 benchmarks/src_variant_ab.py --family attention \
    --variants benchmarks/rounds/s21_variants.py --out $OUT --repeats 4 \
    --rows skewed,noncausal-mean2048,causal-mean2048-hkv4 \
    2>&1 | grep -v "^\[\|Warn\|warn" | tee $OUT/ab.log | cut -c1-170
echo "ab done $((SECONDS - T0)) s"
timeout 200 bash benchmarks/run_device.sh --family attention --backends triton,torch_varlen,flex \
    2>&1 | grep -v Warn | grep -E "^[a-z].*:|^  triton|^  flex|^  torch|geometric" | cut -c1-200
echo "suite done $((SECONDS - T0)) s"
PYTHONPATH=src python3 benchmarks/gpu_tests_parallel.py --workers 2 --timeout $((585 - SECONDS + T0)) --out $OUT \
    -k "tma or schedule or production_sizes or determinis" tests/test_attention_triton.py 2>&1 | tail -6
echo "elapsed $((SECONDS - T0)) s"
