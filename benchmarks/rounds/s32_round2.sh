# Session 32 round 2 (issue #6): with the narrow unfused dhu step in the library (round 1: H16-1seq dhu 1.319 -> 0.752
# ms), the unfused dhu (dv_local launched) against the fused one on the many-chain rows, at several dhu configs.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s32_round2.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 400 python3 benchmarks/src_variant_ab.py --family gated_delta --repeats 2 --out $OUT --profile \
    --variants benchmarks/rounds/s32_gd_variants.py --only unfused_dv,unfused_dv_v64w8,unfused_dv_v32,unfused_dv_v64s3 \
    --rows H16-8seqs,H16-ragged,H16-64seqs,H32-8seqs 2>&1 | grep -v Warn > $OUT/ab_gd.log
grep -hE "^row|: \{|x[01]\.[0-9]+\)|not applicable|rror" $OUT/ab_gd.log | cut -c1-250
grep -hE "^row|kernels of one" $OUT/ab_gd.log | sed 's/void at::native[^,]*,//' | cut -c1-330
echo "elapsed $((SECONDS - T0)) s"
