# Session 22 round 6 (issue #6): k's l2norm inside the forward's solve kernel (ops.KKT_NORM=on: kkt_solve16 writes the
# normalised copy and factors from the raw k; one read of k less) against the l2norm launch, same process
# (gd_switch_ab); then every gated delta gpu test with it on (6 processes), on the tree whose default fuses the
# forward's state pass (FUSE_WU=fwd) and has dhu's unfused step restored.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s22_round6.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
mkdir -p $OUT/kktnorm
PYTHONPATH=src timeout 150 python3 benchmarks/gd_switch_ab.py --repeats 3 --out $OUT/kktnorm \
    --rows H16-8seqs,H16-ragged --switch "jagattn.gated_delta.ops:KKT_NORM=off,on" \
    2>&1 | grep -v Warn | tee $OUT/kktnorm.log | grep -v "^      "
echo "elapsed $((SECONDS - T0)) s"
JAGATTN_GD_KKT_NORM=on PYTHONPATH=src python3 benchmarks/gpu_tests_parallel.py --workers 6 \
    --timeout $((420 - SECONDS + T0)) --out $OUT tests/test_gated_delta_triton.py 2>&1 | tail -8
echo "elapsed $((SECONDS - T0)) s"
