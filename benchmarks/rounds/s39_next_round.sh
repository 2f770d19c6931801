# Prepared in session 39, not run (device time spent): the opt-in eager fast launch (JAGATTN_FAST_LAUNCH=1) as it
# landed (fingerprint inlined, per-kernel info cached; last measured before those changes, round 7b): the same-process
# layers "jit kernel[grid]" vs "launch() (fast path)" and the Gluon "kernel[grid] (descs built)" vs "launch()
# (descs built)", two processes; then do_bench of recsys / B256 with the switch off and on, alternated.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s39_next_round.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
for i in 1 2; do
  JAGATTN_FAST_LAUNCH=1 PYTHONPATH=src timeout 100 python3 benchmarks/host_layers.py --rows recsys -n 300 2>&1 \
    | tee $OUT/host_layers_$i.log | grep -E "C launcher|compiled|jit kernel|launch\(\)|kernel\[grid\]|body|public"
done
for fl in 0 1 0 1 0 1; do
  echo "== JAGATTN_FAST_LAUNCH=$fl"
  JAGATTN_FAST_LAUNCH=$fl PYTHONPATH=src timeout 60 python3 benchmarks/bwd_timeline.py --family hstu --rows recsys,B256-N1024 --no-sleep --reps 1 -n 50 2>&1 | grep -E "^row|host "
done
echo "elapsed $((SECONDS - T0)) s"
