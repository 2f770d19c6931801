# Session 32 round 5 (issue #6): dhu's state-gradient update as one accumulator chain (benchmarks/rounds/s32_gd_variants.py
# acc_chain*), same-process A/B with per-kernel profile on H16-1seq (unfused dv), H16-8seqs and H16-ragged (FUSE_DV).
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s32_round5.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 300 python3 benchmarks/src_variant_ab.py --family gated_delta --repeats 2 --out $OUT --profile \
    --variants benchmarks/rounds/s32_gd_variants.py --only acc_chain,acc_chain_fused,acc_chain_both \
    --rows H16-1seq,H16-8seqs,H16-ragged 2>&1 | grep -v Warn > $OUT/ab_gd.log
grep -hE "^row|: \{|x[01]\.[0-9]+\)|not applicable|rror" $OUT/ab_gd.log | cut -c1-250
grep -hE "^row|kernels of one" $OUT/ab_gd.log | grep -oE "^row.*|^ *[a-z0-9_]+ kernels|_gated_delta_bwd_dhu_kernel [0-9.]+" \
    | paste -sd' ' | sed 's/row /\nrow /g'
echo "elapsed $((SECONDS - T0)) s"
