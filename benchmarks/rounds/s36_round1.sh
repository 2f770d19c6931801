# Session 36 round 1 (issue #6): (a) the cost of fp32 inference on the token loop (session 35's FP32_RECURRENT)
# against the chunked fp32 forward, benchmarks/fp32_recurrent_cost.py; (b) every gated delta gpu test with session 35's
# dqkwg config (64, 4, 2, 64) on the bf16 speed path (not run in session 35), 6 processes sharing the GPU.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s36_round1.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 150 python3 benchmarks/fp32_recurrent_cost.py --out $OUT 2>&1 | grep -v Warn | tee $OUT/fp32_cost.log
echo "elapsed $((SECONDS - T0)) s"
mkdir -p $OUT/gpu
PYTHONPATH=src timeout 420 python3 benchmarks/gpu_tests_parallel.py --workers 6 --timeout 400 --out $OUT/gpu \
    tests/test_gated_delta_triton.py > $OUT/gpu_tests.log 2>&1
tail -8 $OUT/gpu_tests.log
grep -h -E "^FAILED|^E  .*Error|passed|failed" $OUT/gpu/gpu_tests_w*.log | cut -c1-300 | head -30
cd $OUT && tar czf gpu.tgz gpu && rm -rf gpu
echo "elapsed $((SECONDS - T0)) s"
