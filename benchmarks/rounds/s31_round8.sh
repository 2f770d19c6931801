# Session 31 round 8 (issue #5): the Gluon dK/dV kernel with a window at 32 query rows a step, 3 stages (round 6: at
# 64 rows it ran 1.161 ms against the Triton kernel's 0.854 on ctx6-w256; locally 255 registers and a spill, now 228
# and none). (1) its gpu tests (Gluon cases with windows, isolation); (2) same-process A/B on ctx6-w256: default
# (Triton dK/dV with a window) against the Gluon kernel forced, and both Triton kernels.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s31_round8.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 150 python3 -m pytest -q -m gpu -p no:cacheprovider --tb=short -rfE tests/test_hstu_triton.py \
    -k "gluon or nonfinite" > $OUT/gpu_tests.log 2>&1
grep -E "passed|failed|^E  .*Error|^FAILED" $OUT/gpu_tests.log | cut -c1-220 | tail -15
echo "elapsed $((SECONDS - T0)) s"
PYTHONPATH=src timeout 150 python3 benchmarks/src_variant_ab.py --family hstu --repeats 3 --out $OUT --profile \
    --variants benchmarks/rounds/s31_hstu_variants.py --rows ctx6-w256 2>&1 | grep -v Warn > $OUT/ab_hstu.log
grep -hE "^row|: \{|x[01]\.[0-9]+\)|not applicable|rror" $OUT/ab_hstu.log | cut -c1-190
grep -hE "^row|kernels of one" $OUT/ab_hstu.log | sed 's/void at::native.*//' | cut -c1-230
echo "elapsed $((SECONDS - T0)) s"
