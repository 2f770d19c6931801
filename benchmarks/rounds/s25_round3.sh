# Session 25 round 3 (issue #6): per-kernel times of round 2's A/B (GH_IN_DHU off / auto), one pass; the logs as one
# archive (round 2's json files did not come back: too many files under $OUT).
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s25_round3.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
mkdir -p $OUT/r3
PYTHONPATH=src timeout 200 python3 benchmarks/gd_switch_ab.py --repeats 1 --out $OUT/r3 --rows H16-8seqs,H16-1seq \
    --switch "jagattn.gated_delta.triton.chunk_bwd:GH_IN_DHU=off,auto" 2>&1 | grep -v Warn > $OUT/r3/sw.log
grep -E "^H16|bwd _gated|fwd _gated_delta_fwd_h" $OUT/r3/sw.log | cut -c1-150
tar czf $OUT/r3.tgz -C $OUT r3 && rm -rf $OUT/r3
echo "elapsed $((SECONDS - T0)) s"
