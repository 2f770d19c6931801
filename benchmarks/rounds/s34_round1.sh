# Session 34 round 1 (issue #6): what the recompute's gate sums and the chunk kernels' cu_seqlens search cost
# (benchmarks/rounds/s34_gd_variants.py; both variants are measurements, no_gh's dg is wrong by design, noseek8 is
# valid on H16-8seqs only).
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s34_round1.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 200 python3 benchmarks/src_variant_ab.py --family gated_delta --repeats 3 --out $OUT --profile \
    --variants benchmarks/rounds/s34_gd_variants.py --rows H16-8seqs --only no_gh,noseek8 2>&1 | grep -v Warn > $OUT/ab_8seqs.log
mv $OUT/src_variant_ab_gated_delta.json $OUT/ab_8seqs.json
grep -hE "^row|: \{|x[01]\.[0-9]+\)|not applicable|rror|kernels of one" $OUT/ab_8seqs.log | cut -c1-700
echo "elapsed $((SECONDS - T0)) s"
PYTHONPATH=src timeout 200 python3 benchmarks/src_variant_ab.py --family gated_delta --repeats 2 --out $OUT --profile \
    --variants benchmarks/rounds/s34_gd_variants.py --rows H16-ragged,H16-1seq --only no_gh 2>&1 | grep -v Warn > $OUT/ab_long.log
grep -hE "^row|: \{|x[01]\.[0-9]+\)|not applicable|rror|kernels of one" $OUT/ab_long.log | cut -c1-700
echo "elapsed $((SECONDS - T0)) s"
