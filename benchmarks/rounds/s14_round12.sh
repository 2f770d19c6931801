# Session 14, round 12 (kind nvidia-h200): round 11's attention part again (its argument parser lacked the new
# options): the forward's grid order with the wide tile on the long-key rows, SM clock / power sampled.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s14_round12.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv -lms 200 > $OUT/smi.csv 2>&1 &
SMI=$!
PYTHONPATH=src timeout 200 python3 benchmarks/attention_fwd_tile_diag.py --rows causal-mean8192-hkv4,causal-mean8192-hkv16,skewed,noncausal-mean2048 \
    --tiles none --head-fast none,0,1,0,1 2>&1 | grep -v Warn | tee $OUT/tile_diag.log
kill $SMI
echo "elapsed $((SECONDS - T0)) s"
