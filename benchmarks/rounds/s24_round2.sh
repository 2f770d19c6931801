# Session 24 round 2: (issue #6) the state passes' V block on the chain-bound rows (H16-ragged: its longest sequence has
# 106 chunks against 64 on H16-8seqs; H16-1seq): gd_switch_ab config switch, same process; then (issue #5) the hstu
# suite against generative-recommenders' Triton HSTU on this machine (last run on an H100, session 19).
# Call (carry peers): JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s24_round2.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
mkdir -p $OUT/sw
PYTHONPATH=src timeout 200 python3 benchmarks/gd_switch_ab.py --repeats 3 --out $OUT/sw --rows H16-ragged,H16-1seq \
    --switch "config:default|bwd_dhu=32,4,2|fwd_h=32,4,2|bwd_dhu=32,4,2;fwd_h=32,4,2" 2>&1 | grep -v Warn \
    | tee $OUT/sw.log | grep -v "^      "
echo "elapsed $((SECONDS - T0)) s"
timeout 300 bash benchmarks/run_device.sh --family hstu --backends triton,gr_triton \
    2>&1 | grep -v "Warn\|invalid_mask\|offs_m\|offs_n\|^  *[a-z_]* = \|^  *)\|^\[" | tail -34 | cut -c1-200
echo "elapsed $((SECONDS - T0)) s"
