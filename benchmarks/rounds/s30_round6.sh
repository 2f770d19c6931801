# Session 30 round 6 (issue #5): the HSTU Gluon dQ kernel (measurement switch bwd_gluon.DQ_GLUON). (1) its gpu tests
# (SPEC rule, Triton dq to rounding, isolation, Gluon compile) with the Gluon dK/dV ones; (2) same-process A/B on the
# suite rows against the Triton dQ kernel, alone and with the opt-in Gluon dK/dV kernel (--profile).
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s30_round6.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 200 python3 -m pytest -q -p no:cacheprovider --tb=short -rfE tests/test_hstu_triton.py \
    -k "gluon or nonfinite" > $OUT/gpu_tests.log 2>&1
grep -E "passed|failed|^E  .*Error|^FAILED|^E  " $OUT/gpu_tests.log | cut -c1-220 | tail -20
echo "elapsed $((SECONDS - T0)) s"
PYTHONPATH=src timeout 330 python3 benchmarks/src_variant_ab.py --family hstu --repeats 2 --out $OUT --profile \
    --variants benchmarks/rounds/s30_hstu_variants.py --rows B256-N1024,B128-N2048,B64-N4096,recsys 2>&1 \
    | grep -v Warn > $OUT/ab_hstu.log
grep -hE "^row|: \{|x[01]\.[0-9]+\)|not applicable|rror" $OUT/ab_hstu.log | cut -c1-190
grep -hE "^row|kernels of one" $OUT/ab_hstu.log | sed 's/void at::native.*//' | cut -c1-230
echo "elapsed $((SECONDS - T0)) s"
