# Session 32 round 1 (issue #6): the backward state recurrence (dhu) with the gate factors on the narrow [BT, BV] side
# and dU_local loaded one chunk ahead (benchmarks/rounds/s32_gd_variants.py), same-process A/B with per-kernel profile on
# the rows where dhu runs unfused dv_local (H16-1seq) and fused (H16-8seqs, H16-ragged).
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s32_round1.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 420 python3 benchmarks/src_variant_ab.py --family gated_delta --repeats 2 --out $OUT --profile \
    --variants benchmarks/rounds/s32_gd_variants.py --rows H16-1seq,H16-8seqs,H16-ragged 2>&1 \
    | grep -v Warn > $OUT/ab_gd.log
grep -hE "^row|: \{|x[01]\.[0-9]+\)|not applicable|rror" $OUT/ab_gd.log | cut -c1-250
grep -hE "^row|kernels of one" $OUT/ab_gd.log | cut -c1-400
echo "elapsed $((SECONDS - T0)) s"
