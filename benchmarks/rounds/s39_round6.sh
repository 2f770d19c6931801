# Session 39, round 6: the eager fast launch (_core/launch.py) on the HSTU kernels: its gpu tests, the host layers
# and do_bench of the recsys / B256 rows with JAGATTN_FAST_LAUNCH=0 and 1 (separate processes, alternated), then
# the HSTU gpu tests in 4 processes.
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 120 python3 -m pytest -q -m gpu tests/test_launch.py 2>&1 | tail -3
for fl in 0 1 0 1; do
  echo "== JAGATTN_FAST_LAUNCH=$fl"
  JAGATTN_FAST_LAUNCH=$fl PYTHONPATH=src timeout 100 python3 benchmarks/bwd_timeline.py --family hstu --rows recsys,B256-N1024 --no-sleep --reps 1 -n 50 2>&1 | grep -E "^row|host "
done
JAGATTN_FAST_LAUNCH=1 PYTHONPATH=src timeout 120 python3 benchmarks/host_layers.py --rows recsys -n 200 2>&1 | tee $OUT/host_layers.log | grep -v Warning
echo "elapsed $((SECONDS - T0)) s"
PYTHONPATH=src timeout 330 python3 benchmarks/gpu_tests_parallel.py --workers 4 --timeout 320 --out $OUT tests/test_hstu_triton.py tests/test_launch.py 2>&1 | tail -8
echo "elapsed $((SECONDS - T0)) s"
