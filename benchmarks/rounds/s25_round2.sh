# Session 25 round 2 (issue #6): the gate sums in dhu (chunk_bwd.GH_IN_DHU=auto: the recompute first, S0 as bf16
# hi + lo, dS stored bf16 only) against the old order (off), same process; then dhu at V blocks of 32 with it
# (local compile: 184 B of spill at 64, 8 B at 32); then every gated delta gpu test on this tree.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s25_round2.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
mkdir -p $OUT/sw $OUT/cfg
PYTHONPATH=src timeout 240 python3 benchmarks/gd_switch_ab.py --repeats 3 --out $OUT/sw \
    --rows H16-8seqs,H16-ragged,H16-1seq,H16-64seqs \
    --switch "jagattn.gated_delta.triton.chunk_bwd:GH_IN_DHU=off,auto" 2>&1 | grep -v Warn | tee $OUT/sw.log | grep -v "^      "
echo "elapsed $((SECONDS - T0)) s"
PYTHONPATH=src timeout 150 python3 benchmarks/gd_switch_ab.py --repeats 3 --out $OUT/cfg \
    --rows H16-8seqs,H16-ragged \
    --switch "config:default|bwd_dhu=32,4,2" 2>&1 | grep -v Warn | tee $OUT/cfg.log | grep -v "^      "
echo "elapsed $((SECONDS - T0)) s"
PYTHONPATH=src python3 benchmarks/gpu_tests_parallel.py --workers 6 --timeout $((585 - SECONDS + T0)) --out $OUT \
    tests/test_gated_delta_triton.py 2>&1 | tail -8
echo "elapsed $((SECONDS - T0)) s"
