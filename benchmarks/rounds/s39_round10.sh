# Session 39, round 10: every other gpu test with the eager fast launch (attention, HSTU, gk, export, the eager
# fast path, the fp32 route, the launch tests) in 6 processes, then the recsys / B256 host and do_bench A/B.
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
mkdir -p $OUT/gpu
PYTHONPATH=src timeout 470 python3 benchmarks/gpu_tests_parallel.py --workers 6 --timeout 450 --out $OUT/gpu \
    tests/test_attention_triton.py tests/test_hstu_triton.py tests/test_gated_delta_gk.py tests/test_export.py \
    tests/test_eager_fast.py tests/test_fp32_route.py tests/test_launch.py > $OUT/gpu_tests.log 2>&1
tail -8 $OUT/gpu_tests.log
grep -h -E "^FAILED|^E  .*Error" $OUT/gpu/gpu_tests_w*.log | cut -c1-300 | head -30
cd $OUT && tar czf gpu.tgz gpu && rm -rf gpu && cd - > /dev/null
for fl in 0 1 0 1; do
  echo "== JAGATTN_FAST_LAUNCH=$fl"
  JAGATTN_FAST_LAUNCH=$fl PYTHONPATH=src timeout 60 python3 benchmarks/bwd_timeline.py --family hstu --rows recsys --no-sleep --reps 1 -n 50 2>&1 | grep -E "^row|host "
done
echo "elapsed $((SECONDS - T0)) s"
