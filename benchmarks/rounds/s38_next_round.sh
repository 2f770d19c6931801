# Prepared in session 38, not run (device time spent): the gk state passes' V block (BV_SEQ 64, also with the
# other launches at 4 warps) against the session-38 defaults, with a per-kernel profile of the defaults; then a
# GPU fuzz of gk (session 38's was cut on a cold machine: give it the time).
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s38_next_round.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 200 python3 benchmarks/gk_diag_check.py --out $OUT --only s38,bvseq64,bvseq64-4w --profile 2>&1 | tee $OUT/gk_diag_check.log | cut -c1-330
echo "elapsed $((SECONDS - T0)) s"
PYTHONPATH=src timeout 330 python3 benchmarks/fuzz_spec_rule.py --op gated_delta_gk --device cuda --scale 4 --first-seed 38100 --cases 200 --time-budget 300 2>&1 | tee $OUT/gk_fuzz.log | tail -6
echo "elapsed $((SECONDS - T0)) s"
