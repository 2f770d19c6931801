# Session 40 round 6 (issue #6): q's l2norm backward inside the WY kernel (ops.FUSE_Q_L2N) against its own launch,
# same process, alternated (gd_switch_ab.py), every suite row, with a per-kernel profile.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s40_round6.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 420 python3 benchmarks/gd_switch_ab.py --out $OUT --rows H16-8seqs,H16-ragged,H16-1seq,H16-64seqs,H32-8seqs \
    --repeats 3 --switch "jagattn.gated_delta.ops:FUSE_Q_L2N=off,auto" \
    2>&1 | grep -v Warn | tee $OUT/ab.log | grep -E "^H|fwd |wy_kernel|l2norm" | cut -c1-330
echo "elapsed $((SECONDS - T0)) s"
