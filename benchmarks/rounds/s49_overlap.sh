# Session 49: the backward's recompute beside dhu (chunk_bwd.OVERLAP; "on" was the default when rounds 4-5 ran it, now
# opt-in). (1) "ab": the same-process A/B off / on on the five suite rows, (2) "tests": the gated delta gpu tests with
# OVERLAP on (production_slow_gates is where the state term of the gate gradient counts); session 49's round 5 had 3
# failures there, traced afterwards to the side stream overtaking the suite's NaN-poisoned allocations (fixed):
# test_gpu_overlap_side_stream_is_the_serial_result checks exactly that. If all pass, make "on" the default.
# (3) "margins": the SPEC-rule margins off / on on the speed path (40 heads; a 1-token sequence with an initial state,
# where the CPU fuzz of the fp16 "all" test mode failed: fp16 states against fp16's allowance; "on" keeps fp32 states
# for fp16 inputs, and bf16's allowance is 8x wider than 11 bits).
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s49_overlap.sh [ab|tests|margins]
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
if [ "${1:-ab}" = ab ]; then
  mkdir -p $OUT/ab
  PYTHONPATH=src timeout 300 python3 benchmarks/gd_switch_ab.py --switch jagattn.gated_delta.triton.chunk_bwd:OVERLAP=off,on \
      --rows H16-8seqs,H16-1seq,H16-ragged,H16-64seqs,H32-8seqs --repeats 2 --out $OUT/ab 2>&1 | tee $OUT/ab.txt \
      | grep -v "^        0\.[01]" | grep -v "fwd _" | tail -70
  echo "ab rc=$? elapsed $((SECONDS - T0)) s"
fi
if [ "${1:-ab}" = tests ]; then
  export JAGATTN_GD_OVERLAP=on
  PYTHONPATH=src timeout 120 python3 -m pytest -q -p no:cacheprovider tests/test_gated_delta_triton.py \
      -k side_stream_is_the_serial 2>&1 | tail -3
  PYTHONPATH=src timeout 560 python3 benchmarks/gpu_tests_parallel.py --workers 5 --timeout 540 --out $OUT/gpu \
      tests/test_gated_delta_triton.py tests/test_gated_delta_gk.py 2>&1 | tail -30
  echo "tests rc=$? elapsed $((SECONDS - T0)) s"
fi
if [ "${1:-ab}" = margins ]; then
  PYTHONPATH=src timeout 300 python3 benchmarks/gd_dk_lowp_check.py --attr OVERLAP --values off,on --heads 40 \
      --lengths 700,1,1347 --budget 240 2>&1 | grep -v Warning | tee $OUT/overlap_margins.txt | tail -20
  echo "margins rc=$? elapsed $((SECONDS - T0)) s"
fi
