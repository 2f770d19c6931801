# Session 35 round 4 (issue #6): every gated delta gpu test (scalar gates) with wy's key and value loops merged (session 34 round 7's wy_loop12), and with the chunk table in wy (the default since
# 524790c), 6 processes sharing the GPU as in session 28.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s35_round4.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
mkdir -p $OUT/gpu
PYTHONPATH=src timeout 540 python3 benchmarks/gpu_tests_parallel.py --workers 6 --timeout 520 --out $OUT/gpu \
    tests/test_gated_delta_triton.py > $OUT/gpu_tests.log 2>&1
tail -8 $OUT/gpu_tests.log
grep -h -E "^FAILED|^E  .*Error|passed|failed" $OUT/gpu/gpu_tests_w*.log | cut -c1-300 | head -30
cd $OUT && tar czf gpu.tgz gpu && rm -rf gpu
echo "elapsed $((SECONDS - T0)) s"
