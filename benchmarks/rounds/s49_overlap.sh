# Session 49: the backward's recompute beside dhu (chunk_bwd.OVERLAP, default "on"). (1) the same-process A/B off / on
# on the five suite rows, (2) the gated delta gpu tests on the default path (production_slow_gates is where the state
# term of the gate gradient counts).  Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s49_overlap.sh [ab|tests]
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
  PYTHONPATH=src timeout 560 python3 benchmarks/gpu_tests_parallel.py --workers 5 --timeout 540 --out $OUT/gpu \
      tests/test_gated_delta_triton.py tests/test_gated_delta_gk.py 2>&1 | tail -30
  echo "tests rc=$? elapsed $((SECONDS - T0)) s"
fi
