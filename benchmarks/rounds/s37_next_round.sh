# Prepared in session 37, not run (device time spent): the gk launch settings still open, and the recurrent-vs-chunked
# crossover for gk after the faster kkt (backends' gk rule: the token loop up to 128 tokens per sequence).
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s37_next_round.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 240 python3 benchmarks/gk_diag_check.py --out $OUT --only base,4w,kkt2w,kkt2w-kkt32,4w-kkt32,4w-wy4,4w-all 2>&1 | tee $OUT/gk_diag_check.log | cut -c1-330
PYTHONPATH=src timeout 240 python3 benchmarks/gated_delta_probe.py --out $OUT --only crossover 2>&1 | tee $OUT/crossover.log | grep "gk=True"
echo "elapsed $((SECONDS - T0)) s"
