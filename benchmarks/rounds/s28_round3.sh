# Session 28 round 3 (issue #6): the gated delta gpu tests on the segment-state buffer zero-filled (round 2: opcheck's
# dynamic-shape run compared the never-written slots; 8 workers ran out of GPU memory, so 6 here).
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s28_round3.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
mkdir -p $OUT/gpu
PYTHONPATH=src timeout 500 python3 benchmarks/gpu_tests_parallel.py --workers 6 --timeout 480 --out $OUT/gpu \
    tests/test_gated_delta_triton.py > $OUT/gpu_tests.log 2>&1
tail -14 $OUT/gpu_tests.log
grep -h -E "^FAILED|^E  .*Error" $OUT/gpu/gpu_tests_w*.log | cut -c1-300 | head -30
cd $OUT && tar czf gpu.tgz gpu && rm -rf gpu
echo "elapsed $((SECONDS - T0)) s"
