# Session 27 round 10 (issues #4, #5, #6): (1) the isolation tests (a sequence's inf / NaN never reaches another's
# results) and the Gluon gpu tests of both families, after zeroing the next sequence's rows of a partial q / dO block in
# both Gluon dK/dV kernels; (2) what that costs (benchmarks/rounds/s27_zero_variants.py, same process).
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s27_round10.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 330 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_attention_triton.py \
    tests/test_hstu_triton.py tests/test_gated_delta_triton.py -k "nonfinite or gluon" > $OUT/gpu_tests.log 2>&1
grep -E "passed|failed|^E  .*Error|^FAILED" $OUT/gpu_tests.log | cut -c1-200 | tail -15
echo "elapsed $((SECONDS - T0)) s"
PYTHONPATH=src timeout 150 python3 benchmarks/src_variant_ab.py --family attention --repeats 2 --out $OUT \
    --variants benchmarks/rounds/s27_zero_variants.py --only no_zero \
    --rows causal-mean8192-hkv16,skewed,causal-mean512-hkv16 2>&1 | grep -v Warn > $OUT/ab_attention.log
PYTHONPATH=src timeout 100 python3 benchmarks/src_variant_ab.py --family hstu --repeats 2 --out $OUT \
    --variants benchmarks/rounds/s27_zero_variants.py --only hstu_gluon,hstu_gluon_no_zero \
    --rows B256-N1024,B128-N2048 2>&1 | grep -v Warn > $OUT/ab_hstu.log
grep -hE "^row|: \{|default:|no_zero:|hstu_gluon:|not applicable" $OUT/ab_attention.log $OUT/ab_hstu.log | cut -c1-170
echo "elapsed $((SECONDS - T0)) s"
