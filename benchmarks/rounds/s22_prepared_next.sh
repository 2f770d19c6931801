# Prepared in session 22, not run (device time spent): issue #6, the few-chain rows with the forward's fused state
# pass at narrower V blocks (chunk_fwd.FUSE_MIN_BV). 1. H16-1seq (16 chains: V blocks of 16, unfused by default)
# fused vs not; 2. H16-ragged / H16-8seqs (V blocks of 64 by default) at V blocks of 32, fused and not. gd_switch_ab
# reports each value's outputs against the first (a miscompile at narrow V blocks would show there: see
# common.CANDIDATES on fwd_o / dv_local) and the per-kernel times. Then the gated delta gpu tests with the winner.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s22_prepared_next.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
mkdir -p $OUT/bv16 $OUT/bv32
JAGATTN_GD_FUSE_MIN_BV=16 PYTHONPATH=src timeout 150 python3 benchmarks/gd_switch_ab.py --repeats 3 --out $OUT/bv16 \
    --rows H16-1seq --switch "jagattn.gated_delta.triton.chunk_fwd:FUSE_WU=off,fwd" \
    2>&1 | grep -v Warn | tee $OUT/bv16.log | grep -v "^      "
echo "elapsed $((SECONDS - T0)) s"
JAGATTN_GD_FUSE_MIN_BV=16 PYTHONPATH=src timeout 200 python3 benchmarks/gd_switch_ab.py --repeats 3 --out $OUT/bv32 \
    --rows H16-ragged,H16-8seqs --switch "config:default|fwd_h=32,4,2|fwd_h=32,8,2" \
    2>&1 | grep -v Warn | tee $OUT/bv32.log | grep -v "^      "
echo "elapsed $((SECONDS - T0)) s"
