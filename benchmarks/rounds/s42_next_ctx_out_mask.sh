# Prepared in session 42, not run: the split dK/dV kernel's loop mask without the contextual rows' term.
# First: git apply benchmarks/rounds/s42_ctx_out_mask.diff (then commit, and pass that sha).
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s42_next_ctx_out_mask.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 230 python3 benchmarks/gpu_tests_parallel.py --workers 4 --timeout 220 --out $OUT/tests \
    tests/test_hstu_triton.py tests/test_gluon.py 2>&1 | tail -5
grep -h -E "^FAILED|^ERROR" $OUT/tests/*.log 2>/dev/null | head -20
PYTHONPATH=src timeout 200 python3 benchmarks/src_variant_ab.py --family hstu --rows ctx6-w256 \
    --variants benchmarks/rounds/s42_ctx_out_mask_variants.py --repeats 3 --profile --out $OUT/ab 2>&1 | grep -v "^\[" | grep -v warn | tail -8
echo "elapsed $((SECONDS - T0)) s"
