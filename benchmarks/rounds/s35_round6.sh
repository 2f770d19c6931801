# Session 35 round 6 (issue #6): wy's and dqkwg's launch configs re-measured on the current kernels (wy with the chunk
# table and merged loops), same process (benchmarks/gd_switch_ab.py, config: switch).
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s35_round6.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 270 python3 benchmarks/gd_switch_ab.py --out $OUT --rows H16-8seqs,H16-ragged --repeats 2 \
    --switch "config:default|bwd_wy=64,8,2|bwd_wy=64,4,1|bwd_wy=64,8,1|bwd_dqkwg=64,4,2,64|bwd_dqkwg=32,8,3,64" \
    2>&1 | grep -v Warn | tee $OUT/ab.log | grep -vE "^\s+[a-z_]+.*kernel" | cut -c1-400
echo "elapsed $((SECONDS - T0)) s"
