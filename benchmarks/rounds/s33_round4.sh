# Session 33 round 4 (issue #6): FUSE_WU "state" and "all" (s33_gd_variants.py fuse_wu_*).
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s33_round4.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 450 python3 benchmarks/src_variant_ab.py --family gated_delta --repeats 2 --out $OUT --profile \
    --variants benchmarks/rounds/s33_gd_variants.py --rows H16-8seqs,H16-ragged,H16-64seqs --only fuse_wu_state,fuse_wu_all 2>&1 \
    | grep -v Warn > $OUT/ab_gd.log
grep -hE "^row|: \{|x[01]\.[0-9]+\)|not applicable|rror" $OUT/ab_gd.log | cut -c1-250
grep -hE "^row|kernels of one" $OUT/ab_gd.log | grep -oE "^row.*|^ *[a-z0-9_]+ kernels|_gated_delta_(bwd_dhu|fwd_h|fwd_wu_loop)_kernel [0-9.]+" \
    | paste -sd' ' | sed 's/row /\nrow /g'
echo "elapsed $((SECONDS - T0)) s"
