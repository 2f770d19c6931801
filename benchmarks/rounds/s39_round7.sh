# Session 39, round 7: the fast launch's gpu tests (fixed: compared bitwise with Triton's own launch), then the host
# layers and do_bench of recsys / B256 with JAGATTN_FAST_LAUNCH=0 and 1, alternated (separate processes).
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 120 python3 -m pytest -q -m gpu tests/test_launch.py 2>&1 | tail -3
for fl in 0 1; do
  JAGATTN_FAST_LAUNCH=$fl PYTHONPATH=src timeout 100 python3 benchmarks/host_layers.py --rows recsys -n 150 > $OUT/host_layers_fl$fl.log 2>&1
done
paste <(grep -E "^  " $OUT/host_layers_fl0.log | cut -c1-46) <(grep -E "^  " $OUT/host_layers_fl1.log | cut -c37-60)
for fl in 0 1 0 1 0 1; do
  echo "== JAGATTN_FAST_LAUNCH=$fl"
  JAGATTN_FAST_LAUNCH=$fl PYTHONPATH=src timeout 100 python3 benchmarks/bwd_timeline.py --family hstu --rows recsys,B256-N1024 --no-sleep --reps 1 -n 50 2>&1 | grep -E "^row|host "
done
echo "elapsed $((SECONDS - T0)) s"
