# Session 27 round 12 (issue #4): the attention Gluon dK/dV kernel zeroes a partial block at the end of the step before
# it (under that step's dV / dK products): (1) the isolation and Gluon gpu tests of attention; (2) its cost against no
# zeroing (benchmarks/rounds/s27_zero_variants.py), same process, three passes.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s27_round12.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 250 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_attention_triton.py \
    -k "nonfinite or gluon" > $OUT/gpu_tests.log 2>&1
grep -E "passed|failed|^E  .*Error|^FAILED" $OUT/gpu_tests.log | cut -c1-200 | tail -15
echo "elapsed $((SECONDS - T0)) s"
PYTHONPATH=src timeout 300 python3 benchmarks/src_variant_ab.py --family attention --repeats 3 --out $OUT \
    --variants benchmarks/rounds/s27_zero_variants.py --only no_zero \
    --rows causal-mean8192-hkv16,skewed,causal-mean512-hkv16 2>&1 | grep -v Warn > $OUT/ab_attention.log
grep -hE "^row|: \{|default:|no_zero:|not applicable" $OUT/ab_attention.log | cut -c1-170
echo "elapsed $((SECONDS - T0)) s"
