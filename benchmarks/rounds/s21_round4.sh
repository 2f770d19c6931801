# Session 21 round 4 (issue #4): 1. the dK/dV 64x64 4-warp tile (with the TMA q/dO loads) at 1 / 3 / 4 pipeline
# stages against its default 2 (benchmarks/rounds/s21_variants.py), same process, on the rows under 1.2x; 2. the
# two gpu tests that ran out of memory in round 3 (two test processes on one GPU), alone.
# Call (kind nvidia-h100-x1): JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s21_round4.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 200 python3 benchmarks/src_variant_ab.py --family attention \
    --variants benchmarks/rounds/s21_variants.py --only s1,s3,s4 --out $OUT --repeats 4 \
    --rows causal-mean8192-hkv4,skewed,noncausal-mean2048 \
    2>&1 | grep -v "^\[\|Warn\|warn" | tee $OUT/ab.log | cut -c1-170
echo "ab done $((SECONDS - T0)) s"
PYTHONPATH=src timeout 300 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_attention_triton.py \
    -k "production_sizes or fp32_forward" 2>&1 | tail -4
echo "elapsed $((SECONDS - T0)) s"
