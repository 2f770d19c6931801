# Session 33 round 8 (issue #6): round 7's H16-1seq A/B again with the variant's FUSE_WU restored on exit (round 7's
# exit left "fwd" set for every later pass): default (segmented recompute fused) against fuse_wu_fwd (unfused there).
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s33_round8.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 150 python3 benchmarks/src_variant_ab.py --family gated_delta --repeats 3 --out $OUT --profile \
    --variants benchmarks/rounds/s33_gd_variants.py --rows H16-1seq --only fuse_wu_fwd 2>&1 | grep -v Warn > $OUT/ab_gd.log
grep -hE "^row|: \{|x[01]\.[0-9]+\)|not applicable|rror|kernels of one" $OUT/ab_gd.log | cut -c1-600
echo "elapsed $((SECONDS - T0)) s"
