# Session 24 round 5 (issue #6): k's l2norm backward inside the WY kernel (ops.FUSE_K_L2N) against the l2norm launch,
# same process (gd_switch_ab, off first = the reference outputs); then every gated delta gpu test on this tree.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s24_round5.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
mkdir -p $OUT/sw
PYTHONPATH=src timeout 260 python3 benchmarks/gd_switch_ab.py --repeats 3 --out $OUT/sw \
    --rows H16-8seqs,H16-ragged,H16-1seq,H16-64seqs \
    --switch "jagattn.gated_delta.ops:FUSE_K_L2N=off,auto" 2>&1 | grep -v Warn | tee $OUT/sw.log | grep -v "^      "
echo "elapsed $((SECONDS - T0)) s"
PYTHONPATH=src python3 benchmarks/gpu_tests_parallel.py --workers 6 --timeout $((585 - SECONDS + T0)) --out $OUT \
    tests/test_gated_delta_triton.py 2>&1 | tail -8
echo "elapsed $((SECONDS - T0)) s"
