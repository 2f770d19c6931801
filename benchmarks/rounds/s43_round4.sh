# Session 43 round 4 (issue #5): launch replay (_core/replay.py) for the HSTU ops. Host against kernel time on
# recsys / B256 / ctx6 with replay off and on (separate processes, alternated), then the gpu tests of replay, HSTU,
# gluon, the launch module, the eager fast path and export.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s43_round4.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
for r in 0 1 0 1; do
  echo "== JAGATTN_LAUNCH_REPLAY=$r"
  JAGATTN_LAUNCH_REPLAY=$r PYTHONPATH=src timeout 100 python3 -W ignore benchmarks/host_vs_kernel.py --family hstu \
      --rows recsys,B256-N1024,ctx6-w256 --impls triton 2>&1 | tee -a $OUT/host_vs_kernel_$r.txt
done
echo "timing $((SECONDS - T0)) s"
PYTHONPATH=src timeout 290 python3 benchmarks/gpu_tests_parallel.py --workers 4 --timeout 280 --out $OUT/tests \
    tests/test_launch_replay.py tests/test_hstu_triton.py tests/test_gluon.py tests/test_launch.py \
    tests/test_eager_fast.py tests/test_export.py 2>&1 | tail -6
grep -h -E "^FAILED|^ERROR" $OUT/tests/*.log 2>/dev/null | head -20
echo "elapsed $((SECONDS - T0)) s"
