# Session 44 round 5: the suite's implementation order (ours first, then GR) against the reverse, alternated in one
# process with 2 s idle before each pass (benchmarks/suite_order_ab.py; carry peers), the SM clock sampled.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s44_round5.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
export JAGATTN_GR_COMMIT=$(cat peers/gr/COMMIT 2>/dev/null)
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,clocks_event_reasons.sw_power_cap --format=csv -lms 100 \
    > $OUT/clocks.csv &
SMI=$!
PYTHONPATH=src:peers/gr timeout 200 python3 -W ignore benchmarks/suite_order_ab.py --rows B256-N1024,ctx6-w256 \
    --passes 3 2>&1 | grep -v "invalid_mask\|offs_m\[\|offs_n\[\|tracemalloc" | tee $OUT/order_ab.txt
kill $SMI
echo "elapsed $((SECONDS - T0)) s"
