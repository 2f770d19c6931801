# Session 14, round 13 (kind nvidia-h200): GPU fuzz against the SPEC section 5 rule (benchmarks/fuzz_spec_rule.py)
# of the code as it stands: gated delta in bf16 (the kept normalised q/k path, KEEP_QK=auto, never fuzzed on the
# GPU before), gated delta with gk, attention (the wide forward tile is chosen for long keys) and HSTU; parallel
# processes over disjoint seed ranges, each bounded by --time-budget.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s14_round13.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
F="python3 benchmarks/fuzz_spec_rule.py --device cuda --isolate"
job() { set -- $1; PYTHONPATH=src timeout 260 $F --op $1 --first-seed $2 --cases 40 --scale $3 --time-budget 200 $4 2>&1 | grep -E "^FAIL|^fuzz|Error" | sed "s/^/[$1 $2 $4] /"; }
export -f job; export F
printf '%s\n' "gated_delta 3000 4 --dtype=bf16" "gated_delta 3100 4 --dtype=bf16" "gated_delta 3200 2 --dtype=bf16" \
  "gated_delta 3300 2 --dtype=bf16" "gated_delta_gk 3000 2 --dtype=bf16" "gated_delta_gk 3100 2" \
  "attention 3000 8" "attention 3100 8" "attention 3200 16" "hstu 3000 8" "hstu 3100 8" \
  | xargs -P 11 -d '\n' -n 1 bash -c 'job "$1"' _ 2>&1 | tee $OUT/fuzz.log
echo "elapsed $((SECONDS - T0)) s"
