# Session 11, round 7 (kind nvidia-h200, timeout_s 590, carry .whl): which fp16 gated delta kernels need
# split-tf32 products. JAGATTN_GD_FP16_TF32=<kernels> runs the named kernels on tf32 (+KEEP) instead:
# A = the backward's parallel kernels, B = the forward's parallel kernels, C = A+B (only the two state
# passes fwd_h / dhu stay split). Speed on H16-8seqs (fp16), the SPEC-rule fuzz on fp16 seeds 400-429
# per variant, then the fp16 production tests with the variant that passed the fuzz and is fastest.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s11_round7.sh
source benchmarks/device_round_env.sh
export PYTHONPATH="$PWD/src" JAGATTN_AUTOTUNE=0
declare -A V=([A]="dqkwg,wy,dv_local" [B]="fwd_o,kkt,wu" [C]="dqkwg,wy,dv_local,fwd_o,kkt,wu")
echo "== t=$((SECONDS-T0)) speed"
for x in A B C; do
  mkdir -p $OUT/speed$x; echo "-- $x ${V[$x]}"
  JAGATTN_GD_FP16_TF32=${V[$x]} timeout 90 python3 benchmarks/gated_delta_triton.py --out $OUT/speed$x --no-breakdown --no-fla \
    --profile-rows none --rows H16-8seqs,S-H16-4k --dtype fp16 2>&1 | tee $OUT/speed$x/log.txt | grep -E "^S-|^H16|Error" | cut -c1-200
done
echo "== t=$((SECONDS-T0)) fuzz"
export F="python3 benchmarks/fuzz_spec_rule.py --scale 4 --device cuda --dtype fp16"
job() { IFS='|' read -r a s <<< "$1"; r=$(env JAGATTN_GD_FP16_TF32=$a timeout 120 $F --op gated_delta --seed $s 2>&1 | grep -E "^FAIL|^fuzz|Error" | head -1 | cut -c1-400); echo "[var $a | r:$s] $r"; }
export -f job
{ for s in $(seq 400 429); do for x in C A B; do echo "${V[$x]}|$s"; done; done; } \
  | timeout $((420 - (SECONDS-T0))) xargs -P 10 -d '\n' -n 1 bash -c 'job "$1"' _ > $OUT/precision.log 2>&1
for x in A B C; do v=${V[$x]}; echo "$x $v: $(grep -F "[var $v |" $OUT/precision.log | grep -c FAIL) fail, $(grep -F "[var $v |" $OUT/precision.log | grep -c 'fuzz:') pass"; done
grep FAIL $OUT/precision.log | sed -E 's/exceeds 2.0x the input-dtype reference error/vs ref/' | cut -c1-220 | head -12
best=""; for x in C A B; do v=${V[$x]}; if [ "$(grep -F "[var $v |" $OUT/precision.log | grep -c FAIL)" = 0 ] && [ "$(grep -F "[var $v |" $OUT/precision.log | grep -c 'fuzz:')" -gt 10 ]; then best=$v; break; fi; done
echo "== t=$((SECONDS-T0)) production fp16 with JAGATTN_GD_FP16_TF32=$best"
if [ -n "$best" ]; then
  JAGATTN_GD_FP16_TF32=$best timeout -s INT $((570 - (SECONDS-T0))) python3 -m pytest -q -n 3 -m gpu -p no:cacheprovider -rA \
    tests/test_gated_delta_triton.py -k "production_fp16 or fp16_small" 2>&1 | tee $OUT/prod_fp16.log | grep -E "^PASS|^FAIL|passed|failed|^E  .*Error" | cut -c1-250 | tail -8
fi
echo "== t=$((SECONDS-T0)) done"
