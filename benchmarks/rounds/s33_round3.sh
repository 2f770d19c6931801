# Session 33 round 3 (issue #6): dhu V-block configs on the ragged row (s33_gd_variants.py dhu_*).
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s33_round3.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 450 python3 benchmarks/src_variant_ab.py --family gated_delta --repeats 2 --out $OUT --profile \
    --variants benchmarks/rounds/s33_gd_variants.py --rows H16-ragged,H16-8seqs --only dhu_32_4_2,dhu_32_4_3,dhu_32_8_2,dhu_64_8_2,dhu_32_4_2_unfused,dhu_16_4_3_unfused 2>&1 \
    | grep -v Warn > $OUT/ab_gd.log
grep -hE "^row|: \{|x[01]\.[0-9]+\)|not applicable|rror" $OUT/ab_gd.log | cut -c1-250
grep -hE "^row|kernels of one" $OUT/ab_gd.log | grep -oE "^row.*|^ *[a-z0-9_]+ kernels|_gated_delta_(bwd_dhu|bwd_dv_local)_kernel [0-9.]+" \
    | paste -sd' ' | sed 's/row /\nrow /g'
echo "elapsed $((SECONDS - T0)) s"
