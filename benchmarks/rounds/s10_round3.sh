# Session 10, device call 3 (kind nvidia-h200, carry .whl): the bf16 precise path by size
# (JAGATTN_GD_BF16_PRECISE=auto, default: fp32 intermediates + tf32 products up to 65536 tokens x value
# heads). (1) SPEC rule on the 10 seeds that failed and on random seeds (bf16/fp16, random dims), auto
# vs off; (2) speed of the small rows (precise by default) against the speed path and FLA, and the
# large row (speed path by default, unchanged) against PRECISE=on; (3) gated delta gpu tests.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s10_round3.sh
source benchmarks/device_round_env.sh
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl 2>&1 | tail -1
export PYTHONPATH="$PWD/src:/tmp/site" JAGATTN_AUTOTUNE=0
export F="python3 benchmarks/fuzz_spec_rule.py --scale 4 --device cuda"
{ for cs in 16,32:0 16,32:1 128,64:1 32,32:0 64,16:1 128,256:1 16,16:0 32,64:1 64,48:1 128,16:1; do echo "X=auto|$cs"; done
  for s in $(seq 300 344); do echo "X=auto|r:$s"; echo "JAGATTN_GD_BF16_PRECISE=off|r:$s"; done; } > $OUT/jobs.txt
job() {
  IFS='|' read -r a b <<< "$1"
  if [[ "$b" == r:* ]]; then sel="--seed ${b#r:}"; else sel="--dims ${b%:*} --seed ${b#*:}"; fi
  r=$(env $a timeout 240 $F --op gated_delta $sel 2>&1 | grep -E "^FAIL|^fuzz|Error" | head -1 | cut -c1-400)
  echo "[var $a | $b] $r"
}
export -f job
echo "== t=$((SECONDS-T0)) precision jobs ($(wc -l < $OUT/jobs.txt))"
timeout 330 xargs -P 15 -d '\n' -n 1 bash -c 'job "$1"' _ < $OUT/jobs.txt > $OUT/precision.log 2>&1
echo "10 seeds, auto: $(grep -v '| r:' $OUT/precision.log | grep -c FAIL) of $(grep -vc '| r:' $OUT/precision.log) fail"
for v in X=auto JAGATTN_GD_BF16_PRECISE=off; do
  echo "random seeds, $v: $(grep -F "[var $v | r:" $OUT/precision.log | grep -c FAIL) of $(grep -cF "[var $v | r:" $OUT/precision.log) fail"; done
grep FAIL $OUT/precision.log | sed -E 's/exceeds 2.0x the input-dtype reference error/vs ref/' | cut -c1-300
echo "== t=$((SECONDS-T0)) speed"
for v in X=auto JAGATTN_GD_BF16_PRECISE=off; do
  mkdir -p $OUT/speed/$v; echo "-- $v small rows (with FLA)"
  env $v timeout 100 python3 benchmarks/gated_delta_triton.py --out $OUT/speed/$v --no-breakdown --profile-rows none \
    --rows S-H4-2k,S-H8-8k,S-H16-4k,S-H16-4k-1seq 2>&1 | tee $OUT/speed/$v/log.txt | grep -E "^S-|fla|Error" | cut -c1-320
done
for v in X=auto JAGATTN_GD_BF16_PRECISE=on; do
  mkdir -p $OUT/speed/big-$v; echo "-- $v H16-8seqs"
  env $v timeout 60 python3 benchmarks/gated_delta_triton.py --out $OUT/speed/big-$v --no-breakdown --no-fla --profile-rows none \
    --rows H16-8seqs 2>&1 | tee $OUT/speed/big-$v/log.txt | grep -E "^H16|Error"
done
echo "== t=$((SECONDS-T0)) gd gpu tests"
timeout -s INT $((575 - (SECONDS-T0))) python3 -m pytest -q -m gpu tests/test_gated_delta_triton.py -p no:cacheprovider -rA 2>&1 \
  | tee $OUT/gd_tests.log | grep -E "^PASS|^FAIL|^ERROR|passed|failed" | cut -c1-200 | tail -30
echo "== t=$((SECONDS-T0)) done"
