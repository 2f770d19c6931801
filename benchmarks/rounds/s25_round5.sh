# Session 25 round 5 (issue #6): occupancy of the two parallel backward kernels (255 registers: two programs of 4
# warps per SM) under a register cap of 168 (three per SM; local compile: dqkwg 840 B, wy 408 B of spill), and
# dqkwg's never-measured one-key-block configs (NKB 1: dO / v_new / dU tiles read once per chunk).
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s25_round5.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
mkdir -p $OUT/r5a $OUT/r5b
PYTHONPATH=src timeout 200 python3 benchmarks/gd_switch_ab.py --repeats 2 --out $OUT/r5a --rows H16-8seqs,H16-ragged \
    --switch "jagattn.gated_delta.triton.common:MAXNREG_SPEC=none,bwd_dqkwg=168,bwd_wy=168" 2>&1 | grep -v Warn > $OUT/r5a/sw.log
grep -E "^H16|^    fwd|bwd _gated_delta_bwd_(dqkwg|wy)" $OUT/r5a/sw.log | cut -c1-150
echo "elapsed $((SECONDS - T0)) s"
PYTHONPATH=src timeout 260 python3 benchmarks/gd_switch_ab.py --repeats 2 --out $OUT/r5b --rows H16-8seqs,H16-1seq \
    --switch "config:default|bwd_dqkwg=32,8,1,128|bwd_dqkwg=32,4,1,128|bwd_dqkwg=64,4,1,128|bwd_dqkwg=64,4,1,64" \
    2>&1 | grep -v Warn > $OUT/r5b/sw.log
grep -E "^H16|^    fwd|bwd _gated_delta_bwd_(dqkwg|wy)" $OUT/r5b/sw.log | cut -c1-150
tar czf $OUT/r5.tgz -C $OUT r5a r5b && rm -rf $OUT/r5a $OUT/r5b
echo "elapsed $((SECONDS - T0)) s"
