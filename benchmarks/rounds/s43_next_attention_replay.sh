# Prepared in session 43, not run: the attention gpu tests with launch replay forced on (JAGATTN_LAUNCH_REPLAY=1), the
# replay tests (HSTU + attention, including the per-thread scratch allocator added after round 7), then the small
# attention rows with replay off / on. If everything passes, set default=True for the attention Replays (ops.py).
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s43_next_attention_replay.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 80 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_launch_replay.py 2>&1 | grep -E "passed|failed|^FAILED" | head
JAGATTN_LAUNCH_REPLAY=1 PYTHONPATH=src timeout 250 python3 benchmarks/gpu_tests_parallel.py --workers 4 --timeout 240 \
    --out $OUT/tests tests/test_attention_triton.py tests/test_export.py tests/test_eager_fast.py tests/test_hstu_triton.py 2>&1 | tail -5
grep -h -E "^FAILED|^ERROR" $OUT/tests/*.log 2>/dev/null | head -20
for r in 0 1; do
  JAGATTN_LAUNCH_REPLAY=$r PYTHONPATH=src timeout 60 python3 -W ignore benchmarks/host_vs_kernel.py --family attention \
      --rows causal-mean512-hkv16,causal-mean512-hkv4 --impls triton 2>&1 | tee -a $OUT/host_vs_kernel_$r.txt
done
echo "elapsed $((SECONDS - T0)) s"
