# Session 44 round 1: session 43's prepared attention-replay check (the replay gpu tests, the attention / export /
# eager-fast / HSTU gpu tests with JAGATTN_LAUNCH_REPLAY=1, the attention rows with replay off / on), then the
# kernels of ctx6-w256's and B256's forward + backward under do_bench (issue #5: what else runs in the backward).
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s44_round1.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 80 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_launch_replay.py 2>&1 | tee $OUT/replay_tests.log | grep -E "passed|failed|^FAILED" | head
JAGATTN_LAUNCH_REPLAY=1 PYTHONPATH=src timeout 250 python3 benchmarks/gpu_tests_parallel.py --workers 4 --timeout 240 \
    --out $OUT/tests tests/test_attention_triton.py tests/test_export.py tests/test_eager_fast.py tests/test_hstu_triton.py 2>&1 | tail -5
grep -h -E "^FAILED|^ERROR" $OUT/tests/*.log 2>/dev/null | head -20
echo "tests $((SECONDS - T0)) s"
for r in 0 1; do
  JAGATTN_LAUNCH_REPLAY=$r PYTHONPATH=src timeout 60 python3 -W ignore benchmarks/host_vs_kernel.py --family attention \
      --rows causal-mean512-hkv16,causal-mean512-hkv4 --impls triton 2>&1 | tee -a $OUT/host_vs_kernel_$r.txt
done
PYTHONPATH=src timeout 120 python3 -W ignore benchmarks/bwd_timeline.py --family hstu --rows ctx6-w256,B256-N1024 \
    --no-sleep --bench-trace --reps 3 --trace-dir /tmp 2>&1 | tee $OUT/timeline.txt | cut -c1-400
echo "elapsed $((SECONDS - T0)) s"
