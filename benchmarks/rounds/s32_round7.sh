# Session 32 round 7 (issue #6): the forward's fused state pass with the X factor on the narrow side
# (benchmarks/rounds/s32_gd_variants.py fwd_x_narrow), same-process A/B with per-kernel profile on the rows that fuse it.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s32_round7.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 200 python3 benchmarks/src_variant_ab.py --family gated_delta --repeats 2 --out $OUT --profile \
    --variants benchmarks/rounds/s32_gd_variants.py --only fwd_x_narrow --rows H16-8seqs,H16-64seqs,H16-ragged 2>&1 \
    | grep -v Warn > $OUT/ab_gd.log
grep -hE "^row|: \{|x[01]\.[0-9]+\)|not applicable|rror" $OUT/ab_gd.log | cut -c1-250
grep -hE "^row|kernels of one" $OUT/ab_gd.log | grep -oE "^row.*|^ *[a-z0-9_]+ kernels|_gated_delta_fwd_h_kernel [0-9.]+" \
    | paste -sd' ' | sed 's/row /\nrow /g'
echo "elapsed $((SECONDS - T0)) s"
