# Session 40 round 7: GPU fuzz of the SPEC rule on the device's Triton 3.6 (fuzz_spec_rule.py --device cuda --scale 4),
# three processes at once sharing the GPU (the fp64 references are host-bound): gated delta with per-key gates (gk;
# never fuzzed on the GPU before: session 38's run was cut on a cold machine), HSTU and attention (last GPU fuzz:
# session 36), fresh seeds.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s40_round7.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
for op in gated_delta_gk hstu attention; do
  PYTHONPATH=src timeout 330 python3 benchmarks/fuzz_spec_rule.py --op $op --device cuda --scale 4 --first-seed 40000 \
      --cases 300 --time-budget 290 > $OUT/fuzz_$op.log 2>&1 &
done
wait
for op in gated_delta_gk hstu attention; do echo "== $op"; grep -v Warn $OUT/fuzz_$op.log | tail -5 | cut -c1-400; done
echo "elapsed $((SECONDS - T0)) s"
