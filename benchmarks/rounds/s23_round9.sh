# Session 23 round 9 (issue #6): the share of sequences the fused-output pass takes (chunk_fwd.FUSE_O_MAX_MEAN x the mean
# length, default 1.0 since d2748da; 0 = only empty ones = the unfused pass + output kernel) on two ragged batches: the bench's
# H16-ragged (7 sequences 1976..6723, all under 1.5 x the mean: round 8 forward only 1.10x FLA) through src_variant_ab,
# and gd_switch_ab's own H16-ragged draw.
# Not run in session 23 (no device time left): the first call of the next session, then the suite on all five rows.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s23_round9.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
mkdir -p $OUT/var $OUT/sw
PYTHONPATH=src timeout 100 python3 benchmarks/src_variant_ab.py --family gated_delta --repeats 3 --out $OUT/var \
    --variants benchmarks/rounds/s23_variants.py --only maxmean_1.5,maxmean_1.25,maxmean_0 --rows gated_delta/H16-ragged \
    2>&1 | grep -v Warn | tail -6
echo "elapsed $((SECONDS - T0)) s"
PYTHONPATH=src timeout 90 python3 benchmarks/gd_switch_ab.py --repeats 3 --out $OUT/sw --rows H16-ragged \
    --switch "jagattn.gated_delta.triton.chunk_fwd:FUSE_O_MAX_MEAN=1.0,1.25,1.5" 2>&1 | grep -v Warn | tee $OUT/sw.log | grep -v "^      "
echo "elapsed $((SECONDS - T0)) s"
