# Session 43 round 3 (issue #5): host time per layer of the recsys row (benchmarks/host_layers.py) with Triton's own
# dispatch and with the eager fast launch (JAGATTN_FAST_LAUNCH=1), then cProfile of the op bodies.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s43_round3.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
for fl in 0 1 0 1; do
  echo "== JAGATTN_FAST_LAUNCH=$fl"
  JAGATTN_FAST_LAUNCH=$fl PYTHONPATH=src timeout 120 python3 -W ignore benchmarks/host_layers.py --rows recsys -n 150 2>&1 | tee -a $OUT/layers_$fl.txt
done
PYTHONPATH=src timeout 120 python3 -W ignore benchmarks/host_layers.py --rows recsys -n 300 --cprofile > $OUT/cprofile.txt 2>&1
echo "elapsed $((SECONDS - T0)) s"
