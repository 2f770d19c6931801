# Prepared in session 9 for session 10's first device call (kind nvidia-h200, timeout_s 590).
# (1) the bf16 precision experiment that round 5 could not run: JAGATTN_GD_BF16_DOT=tf32x3 now keeps the
# fp32 dot operands (as ieee), alone and with every intermediate in fp32, on the 10 bf16 cases that fail
# the SPEC rule (round 4/5 seeds), then their speed on H16-8seqs / H16-1seq; (2) the gk gpu tests (not
# run since the session-9 launch fixes); (3) fp16 K=256 cases (the stage / V-block rule now also counts
# the fp32 states of fp16 without l2norm: checked only by a local sm_90 compile) and the random fuzz of
# the gated delta ops (--isolate).
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s10_round1.sh
source benchmarks/device_round_env.sh
export PYTHONPATH="$PWD/src" JAGATTN_AUTOTUNE=0
export F="python3 benchmarks/fuzz_spec_rule.py --scale 4 --device cuda"
VARS=("JAGATTN_GD_BF16_DOT=tf32x3" "JAGATTN_GD_BF16_DOT=tf32x3 JAGATTN_GD_BF16_FP32=all" "JAGATTN_GD_BF16_DOT=tf32x3 JAGATTN_GD_BF16_FP32=h,vnew,u,w")
{ for v in "${VARS[@]}"; do
    for cs in 16,32:0 16,32:1 128,64:1 32,32:0 64,16:1 128,256:1 16,16:0 32,64:1 64,48:1 128,16:1; do echo "$v|$cs"; done; done; } > $OUT/jobs.txt
job() {
  IFS='|' read -r a b <<< "$1"
  r=$(env $a timeout 200 $F --op gated_delta --dims ${b%:*} --seed ${b#*:} 2>&1 | grep -E "^FAIL|^fuzz" | head -1 | cut -c1-330)
  echo "[var $a | $b] $r"
}
export -f job
echo "== t=$((SECONDS-T0)) precision jobs"
xargs -P 14 -d '\n' -n 1 bash -c 'job "$1"' _ < $OUT/jobs.txt > $OUT/precision.log 2>&1
for v in "${VARS[@]}"; do echo "-- $v: $(grep -F "[var $v |" $OUT/precision.log | grep -c FAIL) of 10 fail"; done
grep FAIL $OUT/precision.log | cut -c1-260
echo "== t=$((SECONDS-T0)) speed"
mkdir -p $OUT/speed
for v in "JAGATTN_GD_BF16_DOT=tf32" "${VARS[@]}"; do
  echo "-- $v"; env $v timeout 100 python3 benchmarks/gated_delta_triton.py --out $OUT/speed --no-fla --no-breakdown \
    --rows H16-8seqs,H16-1seq --profile-rows none 2>&1 | grep -E "^H16|Error"
done
echo "== t=$((SECONDS-T0)) gk gpu tests + fuzz"
( timeout 150 $F --op gated_delta --dims 256,128 --isolate --cases 6 2>&1 | grep -E "^FAIL|^fuzz|died" > $OUT/k256.log
  timeout $((560 - (SECONDS-T0))) $F --op gated_delta --op gated_delta_gk --isolate --cases 100 --first-seed 200 \
    --time-budget $((520 - (SECONDS-T0))) 2>&1 | grep -v -i warn > $OUT/fuzz.log ) &
timeout -s INT $((540 - (SECONDS-T0))) python3 -m pytest -q -m gpu tests/test_gated_delta_gk.py -p no:cacheprovider -rA 2>&1 \
  | tee $OUT/gk_tests.log | grep -E "^PASS|^FAIL|passed|failed|Error" | tail -20
wait; cat $OUT/k256.log | cut -c1-300; grep -E "^FAIL|^fuzz|died" $OUT/fuzz.log | cut -c1-300 | tail -15
echo "== t=$((SECONDS-T0)) done"
