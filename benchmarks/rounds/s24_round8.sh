# Session 24 round 8: round 7's GPU fuzz again for gated delta and attention (round 7's outer time limits killed those
# two before they printed: --isolate reports only at the end), without --isolate and with a wider margin.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s24_round8.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
for ob in gated_delta:130 attention:110; do
  op=${ob%%:*}
  PYTHONPATH=src timeout $((${ob#*:} + 110)) python3 benchmarks/fuzz_spec_rule.py --device cuda --op $op --scale 4 \
      --rounded-grads --first-seed 24000 --cases 400 --time-budget ${ob#*:} 2>&1 | grep -v Warn \
      | tee $OUT/fuzz_$op.log | grep -v "^ " | tail -12
  echo "elapsed $((SECONDS - T0)) s"
done
