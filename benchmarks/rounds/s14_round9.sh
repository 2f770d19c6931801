# Session 14, round 9 (kind nvidia-h200, carry .whl): the gpu tests of the other families and of the eager
# fast path after its autograd.Function became old-style (forward calls setup_context): HSTU, gated delta
# (incl. gk), eager fast path.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s14_round9.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout -s INT 540 python3 -m pytest -q -n 4 -m gpu -p no:cacheprovider -rA tests/test_hstu_triton.py \
    tests/test_gated_delta_triton.py tests/test_gated_delta_gk.py tests/test_eager_fast.py \
    2>&1 | tee $OUT/gpu_tests.log | grep -E "^FAIL|^SKIP|passed|failed|^E  .*Error" | cut -c1-220 | tail -30
echo "elapsed $((SECONDS - T0)) s"
