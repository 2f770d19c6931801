# Session 31 round 2 (issue #5): round 1 found no idle GPU time inside a B256 forward + backward (2.60-2.68 ms from
# the forward kernel's start to the dQ kernel's end) while do_bench read 2.87-2.93 ms. Trace do_bench itself
# (--bench-trace) and sample the SM clock and power meanwhile (nvidia-smi every 50 ms).
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s31_round2.sh
export OUT=${OUT:-$PWD/.device-out}
source benchmarks/device_round_env.sh
mkdir -p $OUT/traces
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active \
    --format=csv -lms 50 > $OUT/clocks.csv 2>&1 &
SMI=$!
{
echo "== default"
PYTHONPATH=src timeout 200 python3 benchmarks/bwd_timeline.py --family hstu --no-sleep --reps 4 --bench-trace \
    --trace-dir $OUT/traces --rows B256-N1024,B128-N2048,ctx6-w256 2>&1 | grep -v Warn
echo "== JAGATTN_HSTU_GLUON=1"
JAGATTN_HSTU_GLUON=1 PYTHONPATH=src timeout 150 python3 benchmarks/bwd_timeline.py --family hstu --no-sleep \
    --reps 4 --bench-trace --trace-dir $OUT/traces --rows B256-N1024 2>&1 | grep -v Warn
echo "elapsed $((SECONDS - T0)) s"
} > $OUT/log.txt 2>&1
kill $SMI
cd $OUT && rm -rf traces
grep -E "^row|under do_bench|host|elapsed|==|Error" $OUT/log.txt | head -60
awk -F, 'NR>1{print $2,$4,$6}' $OUT/clocks.csv | sort | uniq -c | sort -rn | head -15
