# Session 31 round 6 (issue #5): the HSTU Gluon dK/dV and dQ kernels with windows. (1) every HSTU gpu test (the Gluon
# cases now with windows W 7..256 and window-exempt rows F); (2) same-process A/B on ctx6-w256 (the suite's window
# row) and B256 (no window: the loop's third phase must cost nothing) against the Triton dK/dV kernel and both Triton
# kernels (--profile).
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s31_round6.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 260 python3 -m pytest -q -m gpu -p no:cacheprovider --tb=short -rfE tests/test_hstu_triton.py \
    > $OUT/gpu_tests.log 2>&1
grep -E "passed|failed|^E  .*Error|^FAILED" $OUT/gpu_tests.log | cut -c1-220 | tail -15
echo "elapsed $((SECONDS - T0)) s"
PYTHONPATH=src timeout 200 python3 benchmarks/src_variant_ab.py --family hstu --repeats 2 --out $OUT --profile \
    --variants benchmarks/rounds/s31_hstu_variants.py --rows ctx6-w256,B256-N1024 2>&1 \
    | grep -v Warn > $OUT/ab_hstu.log
grep -hE "^row|: \{|x[01]\.[0-9]+\)|not applicable|rror" $OUT/ab_hstu.log | cut -c1-190
grep -hE "^row|kernels of one" $OUT/ab_hstu.log | sed 's/void at::native.*//' | cut -c1-230
echo "elapsed $((SECONDS - T0)) s"
