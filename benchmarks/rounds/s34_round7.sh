# Session 34 round 7 (issue #6): wy's key and value loops as one loop (wy_loop12, benchmarks/rounds/s34_gd_variants.py).
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s34_round7.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 300 python3 benchmarks/src_variant_ab.py --family gated_delta --repeats 3 --out $OUT --profile \
    --variants benchmarks/rounds/s34_gd_variants.py --rows H16-8seqs,H16-ragged,H16-1seq \
    --only wy_loop12 2>&1 | grep -v Warn > $OUT/ab_gd.log
grep -hE "^row|: \{|x[01]\.[0-9]+\)|not applicable|rror|kernels of one" $OUT/ab_gd.log | cut -c1-300
echo "elapsed $((SECONDS - T0)) s"
