# Session 38 round 3: round 2's gk gpu tests again (round 2's one pytest process ran out of its 200 s after 2 of
# the 6 tests, compiling on a cold machine): three processes, a longer limit.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s38_round3.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 480 python3 benchmarks/gpu_tests_parallel.py --workers 3 --timeout 460 --out $OUT tests/test_gated_delta_gk.py 2>&1 | tail -8
grep -h "passed\|failed\|Error" $OUT/gpu_tests_w*.log | tail -12
echo "elapsed $((SECONDS - T0)) s"
