# Session 38 round 1: session 37's prepared gk round (launch settings, gk recurrent-vs-chunked crossover) and the
# recsys row's host time (bwd_timeline with cProfile, op_overhead).
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s38_round1.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 240 python3 benchmarks/gk_diag_check.py --out $OUT --only base,4w,kkt2w,kkt2w-kkt32,4w-kkt32,4w-wy4,4w-all 2>&1 | tee $OUT/gk_diag_check.log | cut -c1-330
echo "elapsed $((SECONDS - T0)) s"
PYTHONPATH=src timeout 150 python3 benchmarks/gated_delta_probe.py --out $OUT --only crossover 2>&1 | tee $OUT/crossover.log | grep "gk=True"
echo "elapsed $((SECONDS - T0)) s"
unset JAGATTN_AUTOTUNE
PYTHONPATH=src timeout 120 python3 benchmarks/bwd_timeline.py --family hstu --rows recsys --no-sleep --cprofile -n 100 --trace-dir $OUT > $OUT/recsys_timeline.log 2>&1
head -5 $OUT/recsys_timeline.log; grep -A45 "Ordered by: internal" $OUT/recsys_timeline.log | head -50
echo "elapsed $((SECONDS - T0)) s"
PYTHONPATH=src timeout 90 python3 benchmarks/op_overhead.py --json $OUT/op_overhead.json > $OUT/op_overhead.log 2>&1; grep -i hstu $OUT/op_overhead.log | head -20
echo "elapsed $((SECONDS - T0)) s"
