# Session 20 round 2 (issue #5): the packed bf16x2 HSTU backward scores (mask._silu_a_ds_bf16x2; dK/dV SASS per
# unmasked step 460 -> 402, dQ 387 -> 365, local Triton 3.6). 1. same-process A/B against the fp32 scores
# (variant fp32_bwd) on the five suite rows; 2. the HSTU gpu tests (6 pytest processes) beside two GPU fuzz runs
# of the SPEC rule on the same seeds, packed (default) and fp32 (PACKED_BWD=0), bf16, lengths x16.
# Call (kind nvidia-h100-x1): JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s20_round2.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 300 python3 benchmarks/src_variant_ab.py --family hstu \
    --variants benchmarks/rounds/s20_variants.py --only fp32_bwd --out $OUT --repeats 4 \
    2>&1 | grep -v "^\[\|Warn\|warn" | tee $OUT/ab_hstu.log | cut -c1-160
echo "ab done $((SECONDS - T0)) s"
B=$((560 - SECONDS + T0))
for mode in auto 0; do
  PYTHONPATH=src timeout $B python3 benchmarks/fuzz_spec_rule.py --op hstu --device cuda --dtype bf16 --scale 16 \
      --cases 400 --time-budget $((B - 40)) --set "jagattn.hstu.triton.fwd.PACKED_BWD='$mode'" >$OUT/fuzz_$mode.log 2>&1 &
done
PYTHONPATH=src python3 benchmarks/gpu_tests_parallel.py --workers 4 --timeout $((B - 10)) --out $OUT tests/test_hstu_triton.py \
    2>&1 | tail -5
wait
for mode in auto 0; do echo "fuzz PACKED_BWD=$mode:"; grep -v "^\[\|Warn\|warn" $OUT/fuzz_$mode.log | tail -6 | cut -c1-300; done
echo "elapsed $((SECONDS - T0)) s"
