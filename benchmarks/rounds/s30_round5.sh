# Session 30 round 5 (issue #4): (1) the attention suite again (the mean-8192 rows passed 1.2x by 1-2% in round 4);
# (2) the fp32-route gpu cases that never finished in rounds 2-3, one pytest process per test (130 s each), five
# lanes at once (round 2's F's came with three processes on the GPU), errors printed.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s30_round5.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
mkdir -p $OUT/suite
OUT=$OUT/suite timeout 240 bash benchmarks/run_device.sh --family attention --backends triton,torch_varlen,flex \
    > $OUT/suite_stdout.txt 2>&1
grep -v "^\[" $OUT/suite/log.txt | grep -E "^[a-z0-9-]+:|^  (triton|torch_varlen|flex)" | cut -c1-200
echo "elapsed $((SECONDS - T0)) s"
lane() {
    local n=0
    while read -r id; do
        n=$((n + 1))
        if [ $((n % 5)) -ne "$1" ]; then continue; fi
        PYTHONPATH=src timeout 130 python3 -m pytest -q -p no:cacheprovider --tb=short "$id" > "$OUT/t_$1_$n.log" 2>&1
        echo "rc=$? $id" >> "$OUT/t_$1_$n.log"
    done < benchmarks/rounds/s30_round5_ids.txt
}
lane 0 & lane 1 & lane 2 & lane 3 & lane 4 & wait
for f in $OUT/t_*.log; do tail -1 "$f"; grep -hE "^E  |Error|passed|failed" "$f" | grep -v Warn | head -8 | cut -c1-240; done
cd $OUT && tar czf suite.tgz suite suite_stdout.txt t_*.log && rm -rf suite suite_stdout.txt t_*.log
echo "elapsed $((SECONDS - T0)) s"
