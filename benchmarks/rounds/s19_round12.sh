# Session 19 round 12 (issue #4): the attention forward with TMA K/V loads (fwd.use_tma, new default): same-process
# A/B against the pointer loads (benchmarks/rounds/s19_round12_variants.py) on four rows, three passes; then the
# attention gpu tests of the tree (the new test_gpu_forward_tma_loads included).
# Call (kind nvidia-h100-x1): JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s19_round12.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout -s INT 150 python3 benchmarks/src_variant_ab.py --family attention \
    --variants benchmarks/rounds/s19_round12_variants.py --out $OUT --repeats 3 \
    --rows causal-mean8192-hkv4,skewed,causal-mean8192-hkv16,noncausal-mean2048 \
    2>&1 | grep -v "^\[\|Warn\|warn" | tee $OUT/ab.log | cut -c1-140
echo "A/B done $((SECONDS - T0)) s"
PYTHONPATH=src timeout -s INT $((520 - SECONDS + T0)) python3 -m pytest -q -m gpu tests/test_attention_triton.py \
    -p no:cacheprovider -rfE --durations=3 2>&1 | tee $OUT/gpu_tests.log | tail -8
echo "elapsed $((SECONDS - T0)) s"
