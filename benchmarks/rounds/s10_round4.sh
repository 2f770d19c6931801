# Session 10, device call 4 (kind nvidia-h200): speed of the bf16 precise path on the small rows (auto =
# precise, off = speed path, ieee = precise with exact fp32 products) and on H16-8seqs (PRECISE=on), then
# the gated delta gpu tests while the SPEC-rule fuzz continues on more random seeds and tries exact
# products (JAGATTN_GD_BF16_DOT=ieee) on the two seeds the precise path still fails.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s10_round4.sh
source benchmarks/device_round_env.sh
export PYTHONPATH="$PWD/src" JAGATTN_AUTOTUNE=0
export F="python3 benchmarks/fuzz_spec_rule.py --scale 4 --device cuda"
echo "== t=$((SECONDS-T0)) speed"
SV=("X=auto" "JAGATTN_GD_BF16_PRECISE=off" "JAGATTN_GD_BF16_PRECISE=on JAGATTN_GD_BF16_DOT=ieee")
for i in 0 1 2; do
  mkdir -p $OUT/speed$i; echo "-- ${SV[$i]} small rows"
  env ${SV[$i]} timeout 120 python3 benchmarks/gated_delta_triton.py --out $OUT/speed$i --no-breakdown --no-fla --profile-rows none \
    --rows S-H4-2k,S-H8-8k,S-H16-4k,S-H16-4k-1seq 2>&1 | tee $OUT/speed$i/log.txt | grep -E "^S-|Error" | cut -c1-200
done
mkdir -p $OUT/speed3; echo "-- PRECISE=on H16-8seqs"
JAGATTN_GD_BF16_PRECISE=on timeout 90 python3 benchmarks/gated_delta_triton.py --out $OUT/speed3 --no-breakdown --no-fla \
  --profile-rows H16-8seqs --rows H16-8seqs 2>&1 | tee $OUT/speed3/log.txt | grep -E "^H16|Error|^    [ 0-9.]+  _gated" | cut -c1-120
echo "== t=$((SECONDS-T0)) gd gpu tests + fuzz"
{ for cs in 128,64:1; do echo "JAGATTN_GD_BF16_DOT=ieee|$cs"; done; echo "JAGATTN_GD_BF16_DOT=ieee|r:309"
  for s in $(seq 323 362); do echo "X=auto|r:$s"; done; } > $OUT/jobs.txt
job() {
  IFS='|' read -r a b <<< "$1"
  if [[ "$b" == r:* ]]; then sel="--seed ${b#r:}"; else sel="--dims ${b%:*} --seed ${b#*:}"; fi
  r=$(env $a timeout 200 $F --op gated_delta $sel 2>&1 | grep -E "^FAIL|^fuzz|Error" | head -1 | cut -c1-400)
  echo "[var $a | $b] $r"
}
export -f job
( timeout $((560 - (SECONDS-T0))) xargs -P 8 -d '\n' -n 1 bash -c 'job "$1"' _ < $OUT/jobs.txt > $OUT/precision.log 2>&1 ) &
timeout -s INT $((565 - (SECONDS-T0))) python3 -m pytest -q -m gpu tests/test_gated_delta_triton.py -p no:cacheprovider -rA 2>&1 \
  | tee $OUT/gd_tests.log | grep -E "^PASS|^FAIL|^ERROR|passed|failed" | cut -c1-160 | tail -30
wait
grep -c . $OUT/precision.log; grep -vE "0/1 failed" $OUT/precision.log | sed -E 's/exceeds 2.0x the input-dtype reference error/vs ref/' | cut -c1-300
echo "== t=$((SECONDS-T0)) done"
