# Prepared in session 46, not yet run: the standing slice of gpu tests with autotuning ON (session 45's HSTU dQ bug
# hid for weeks because every device round runs JAGATTN_AUTOTUNE=0: one config, no timing runs). Autotuning times
# every config of each new key on the first call, so a fresh machine spends minutes here; the slice is the tests
# that cover each autotuned launcher once at production sizes (HSTU forward / dK/dV / dQ incl. the contextual split
# and determinism, attention forward / dK/dV+dQ and determinism; gated delta picks its configs by rule, not by
# triton.autotune, so it is not in the slice).
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s46_next_round.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=1
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 560 python3 benchmarks/gpu_tests_parallel.py --workers 4 --timeout 540 --out $OUT/autotune_on \
    -k "production or deterministic or ctx_split or cached_bf16 or dq_modes" \
    tests/test_hstu_triton.py tests/test_attention_triton.py 2>&1 | tail -6
grep -h -E "^FAILED|^ERROR" $OUT/autotune_on/*.log 2>/dev/null | head -20
# session 46's compile / strict-export fixes (CPU-tested only): tests/test_compile.py runs on cuda via the device
# fixture (not -m gpu), with JAGATTN_AUTOTUNE=0 like the other rounds
JAGATTN_AUTOTUNE=0 PYTHONPATH=src timeout 300 python3 -m pytest -q -p no:cacheprovider tests/test_compile.py tests/test_autograd.py \
    tests/test_dispatch.py --tb=short 2>&1 | tail -5
echo "elapsed $((SECONDS - T0)) s"
