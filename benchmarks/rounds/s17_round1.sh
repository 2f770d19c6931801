# Session 17, round 1 (prepared in session 16 as s16_prepared_gd_spills.sh): the spill-free 8-warp configs of the gated delta
# backward (src/jagattn/gated_delta/README.md, "Session 16") against the defaults, same process, every suite row.
# Outputs are compared per value (bitwise or max rel diff) by the script.
# Call (kind nvidia-h200): JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s17_round1.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 540 python3 benchmarks/gd_switch_ab.py --repeats 2 --out $OUT \
    --switch "config:default|bwd_dqkwg=32,8,3,64|bwd_wy=64,8,2|bwd_dqkwg=32,8,3,64;bwd_wy=64,8,2|bwd_dqkwg=64,8,3,64;bwd_wy=32,8,2" \
    2>&1 | grep -v Warn | tail -60 | tee $OUT/gd_spills_ab.log
echo "elapsed $((SECONDS - T0)) s"
