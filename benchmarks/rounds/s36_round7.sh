# Session 36 round 7: the gpu tests round 6 lost to GPU memory exhaustion (8 processes) or its timeout, again in 3
# processes, with conftest's new empty_cache after every test.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s36_round7.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
mapfile -t IDS < benchmarks/rounds/s36_round7_ids.txt
for w in 0 1 2; do
  sel=(); for i in "${!IDS[@]}"; do [ $((i % 3)) -eq $w ] && sel+=("${IDS[$i]}"); done
  PYTHONPATH=src timeout 380 python3 -m pytest -q -rfE -p no:cacheprovider "${sel[@]}" > $OUT/w$w.log 2>&1 &
done
wait
for w in 0 1 2; do echo "== w$w: $(tail -1 $OUT/w$w.log)"; grep -E "^FAILED|^E  .*Error" $OUT/w$w.log | cut -c1-250 | head -8; done
echo "elapsed $((SECONDS - T0)) s"
