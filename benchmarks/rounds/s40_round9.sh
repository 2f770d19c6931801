# Session 40 round 9: session 38's prepared gk A/B (benchmarks/rounds/s38_next_round.sh without its fuzz, run in round
# 7): the gk state passes' V block at 64 (BV_SEQ; with the chunk-parallel launches at 4 warps too) against the defaults.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s40_round9.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 230 python3 benchmarks/gk_diag_check.py --out $OUT --only s38,bvseq64,bvseq64-4w --profile 2>&1 | tee $OUT/gk_diag_check.log | grep -v Warn | cut -c1-300 | tail -40
echo "elapsed $((SECONDS - T0)) s"
