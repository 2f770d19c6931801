# Session 10, device call 5 (kind nvidia-h200): the bf16 precise path without fp32 q/k copies (those sent
# the kernels down the fp16 path's exact products: 10-25x slower in call 4). Speed of the small rows
# (auto = precise) and of H16-8seqs with PRECISE=on (per kernel); SPEC-rule fuzz on the 10 failing seeds,
# seed 309 and random seeds 300-349. Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s10_round5.sh
source benchmarks/device_round_env.sh
export PYTHONPATH="$PWD/src" JAGATTN_AUTOTUNE=0
export F="python3 benchmarks/fuzz_spec_rule.py --scale 4 --device cuda"
echo "== t=$((SECONDS-T0)) speed"
mkdir -p $OUT/speed0 $OUT/speed1
timeout 100 python3 benchmarks/gated_delta_triton.py --out $OUT/speed0 --no-breakdown --no-fla --profile-rows S-H16-4k \
    --rows S-H4-2k,S-H8-8k,S-H16-4k,S-H16-4k-1seq 2>&1 | tee $OUT/speed0/log.txt | grep -E "^S-|Error|^    [ 0-9.]+  _gated" | cut -c1-200
JAGATTN_GD_BF16_PRECISE=on timeout 60 python3 benchmarks/gated_delta_triton.py --out $OUT/speed1 --no-breakdown --no-fla \
  --profile-rows H16-8seqs --rows H16-8seqs 2>&1 | tee $OUT/speed1/log.txt | grep -E "^H16|Error|^    [ 0-9.]+  _gated" | cut -c1-120
echo "== t=$((SECONDS-T0)) fuzz"
{ for cs in 16,32:0 16,32:1 128,64:1 32,32:0 64,16:1 128,256:1 16,16:0 32,64:1 64,48:1 128,16:1; do echo "$cs"; done
  for s in $(seq 300 349); do echo "r:$s"; done; } > $OUT/jobs.txt
job() {
  b=$1
  if [[ "$b" == r:* ]]; then sel="--seed ${b#r:}"; else sel="--dims ${b%:*} --seed ${b#*:}"; fi
  r=$(timeout 150 $F --op gated_delta $sel 2>&1 | grep -E "^FAIL|^fuzz|Error" | head -1 | cut -c1-400)
  echo "[$b] $r"
}
export -f job
timeout $((300 - (SECONDS-T0))) xargs -P 15 -d '\n' -n 1 bash -c 'job "$1"' _ < $OUT/jobs.txt > $OUT/precision.log 2>&1
echo "seeds: $(grep -v '\[r:' $OUT/precision.log | grep -c FAIL) of $(grep -vc '\[r:' $OUT/precision.log) fail; random: $(grep '\[r:' $OUT/precision.log | grep -c FAIL) of $(grep -c '\[r:' $OUT/precision.log) fail"
grep -v "0/1 failed" $OUT/precision.log | sed -E 's/exceeds 2.0x the input-dtype reference error/vs ref/' | cut -c1-300
echo "== t=$((SECONDS-T0)) done"
