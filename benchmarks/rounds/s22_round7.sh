# Session 22 round 7 (issue #6), the first parts of s22_prepared_next.sh within the session's last device time:
# H16-1seq with the forward's state pass fused at V blocks of 16 (FUSE_MIN_BV=16) vs unfused; H16-ragged at V
# blocks of 32 (fused, FUSE_MIN_BV=16) vs its default 64. Measurement only: the defaults do not change. Result:
# both miscompile (16: illegal memory access; 32: o NaN and not repeatable), so the switch was removed after this
# round (code 95423ef has it) and chunk_fwd.fuse_wu fuses at V blocks of 64 only.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s22_round7.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
mkdir -p $OUT/bv16 $OUT/bv32
JAGATTN_GD_FUSE_MIN_BV=16 PYTHONPATH=src timeout 100 python3 benchmarks/gd_switch_ab.py --repeats 2 --out $OUT/bv16 \
    --rows H16-1seq --switch "jagattn.gated_delta.triton.chunk_fwd:FUSE_WU=off,fwd" \
    2>&1 | grep -v Warn | tee $OUT/bv16.log | grep -v "^      "
echo "elapsed $((SECONDS - T0)) s"
JAGATTN_GD_FUSE_MIN_BV=16 PYTHONPATH=src timeout 90 python3 benchmarks/gd_switch_ab.py --repeats 2 --no-profile \
    --out $OUT/bv32 --rows H16-ragged --switch "config:default|fwd_h=32,4,2" \
    2>&1 | grep -v Warn | tee $OUT/bv32.log
echo "elapsed $((SECONDS - T0)) s"
