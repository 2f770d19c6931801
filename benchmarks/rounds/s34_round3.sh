# Session 34 round 3 (issue #6): wy's exposed load latencies: the partial gate sums and l2norm factors loaded at the
# program's start (wy_early), the two-tile loops unrolled (wy_static), both (benchmarks/rounds/s34_gd_variants.py).
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s34_round3.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 300 python3 benchmarks/src_variant_ab.py --family gated_delta --repeats 3 --out $OUT --profile \
    --variants benchmarks/rounds/s34_gd_variants.py --rows H16-8seqs,H16-ragged \
    --only wy_early,wy_static,wy_early_static 2>&1 | grep -v Warn > $OUT/ab_gd.log
grep -hE "^row|: \{|x[01]\.[0-9]+\)|not applicable|rror|kernels of one" $OUT/ab_gd.log | cut -c1-330
echo "elapsed $((SECONDS - T0)) s"
