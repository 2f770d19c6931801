# Session 30 round 3: the gpu tests that failed or did not finish in round 2 (fp32 forward at D 128 / 256, the fp32
# route at every head dim), one pytest process per test (60 s each), three lanes at once, the errors printed.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s30_round3.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
lane() {
    local n=0
    while read -r id; do
        n=$((n + 1))
        if [ $((n % 3)) -ne "$1" ]; then continue; fi
        PYTHONPATH=src timeout 60 python3 -m pytest -q -p no:cacheprovider --tb=short "$id" > "$OUT/t_$1_$n.log" 2>&1
        echo "rc=$? $id" >> "$OUT/t_$1_$n.log"
    done < benchmarks/rounds/s30_round3_ids.txt
}
lane 0 & lane 1 & lane 2 & wait
for f in $OUT/t_*.log; do tail -1 "$f"; grep -hE "^E  |Error|passed|failed" "$f" | grep -v Warn | head -8 | cut -c1-240; done
cd $OUT && tar czf tests.tgz t_*.log && rm -f t_*.log
echo "elapsed $((SECONDS - T0)) s"
