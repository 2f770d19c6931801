# Session 44 round 3: the attention / export / eager-fast / HSTU / gluon gpu tests with launch replay forced on
# (round 1's run of them was cut by its timeout: a fresh machine compiles slowly).
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s44_round3.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
JAGATTN_LAUNCH_REPLAY=1 PYTHONPATH=src timeout 560 python3 benchmarks/gpu_tests_parallel.py --workers 6 --timeout 540 \
    --out $OUT/tests tests/test_attention_triton.py tests/test_export.py tests/test_eager_fast.py tests/test_hstu_triton.py \
    tests/test_gluon.py 2>&1 | tail -8
grep -h -E "^FAILED|^ERROR" $OUT/tests/*.log 2>/dev/null | head -20
for f in $OUT/tests/*.log; do tail -n 1 $f; done
echo "elapsed $((SECONDS - T0)) s"
