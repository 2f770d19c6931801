# Session 42 round 2 (issue #5): the contextual rows' dQ split (ctx_split): every HSTU + gluon gpu test, then the
# same-process A/B on ctx6-w256 (s42_split_variants.py). Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s42_round2.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 260 python3 benchmarks/gpu_tests_parallel.py --workers 4 --timeout 250 --out $OUT/tests \
    tests/test_hstu_triton.py tests/test_gluon.py 2>&1 | tail -8
grep -h -E "^FAILED|^ERROR|Error:" $OUT/tests/*.log 2>/dev/null | head -20
echo "tests $((SECONDS - T0)) s"
PYTHONPATH=src timeout 300 python3 benchmarks/src_variant_ab.py --family hstu --rows ctx6-w256 \
    --variants benchmarks/rounds/s42_split_variants.py --repeats 3 --profile --out $OUT/ab 2>&1 | grep -v "^\[" | tail -20
echo "elapsed $((SECONDS - T0)) s"
