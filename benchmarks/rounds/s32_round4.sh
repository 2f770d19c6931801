# Session 32 round 4 (issue #6): H16-1seq's dhu launch configs on the narrow step; the FUSE_DV dhu step with one of the
# two narrow changes at a time (benchmarks/rounds/s32_gd_variants.py), same-process A/Bs with per-kernel profiles.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s32_round4.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
V=benchmarks/rounds/s32_gd_variants.py
mkdir -p $OUT/a $OUT/b
PYTHONPATH=src timeout 200 python3 benchmarks/src_variant_ab.py --family gated_delta --repeats 2 --out $OUT/a --profile \
    --variants $V --only dhu_16_4_2,dhu_16_4_4,dhu_32_4_3,dhu_16_8_3 --rows H16-1seq 2>&1 | grep -v Warn > $OUT/ab_1seq.log
PYTHONPATH=src timeout 200 python3 benchmarks/src_variant_ab.py --family gated_delta --repeats 2 --out $OUT/b --profile \
    --variants $V --only fused_k_narrow,fused_q_narrow --rows H16-8seqs,H16-ragged 2>&1 | grep -v Warn > $OUT/ab_fused.log
for f in $OUT/ab_1seq.log $OUT/ab_fused.log; do
  grep -hE "^row|: \{|x[01]\.[0-9]+\)|not applicable|rror" $f | cut -c1-250
  grep -hE "^row|kernels of one" $f | sed 's/void at::native[^,]*,//' | grep -oE "^row.*|^ *[a-z0-9_]+ kernels|_gated_delta_bwd_dhu_kernel [0-9.]+" | paste -sd' ' | sed 's/row /\nrow /g'
done
echo "elapsed $((SECONDS - T0)) s"
