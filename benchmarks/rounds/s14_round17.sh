# Session 14, round 17 (kind nvidia-h200): the attention gpu tests after the wide tile was limited to head dim
# 128 (the d64 production cases now keep the long/short tiles; the wide case is d128 causal and non-causal).
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s14_round17.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout -s INT 240 python3 -m pytest -q -n 4 -m gpu -p no:cacheprovider -rA tests/test_attention_triton.py \
    -k "production or fp32" 2>&1 | tee $OUT/gpu_tests_attention.log | grep -E "^FAIL|passed|failed|^E  .*Error" | cut -c1-220 | tail -12
echo "elapsed $((SECONDS - T0)) s"
