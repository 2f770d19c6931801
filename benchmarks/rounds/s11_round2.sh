# Prepared in session 10 for session 11 (kind nvidia-h200, timeout_s 590): the fp16 opt-in
# JAGATTN_GD_FP16_DOT=tf32 (fp32 intermediates kept, tf32 products with KEEP instead of exact ones;
# session 10 measured the exact products 10-25x slower than bf16). Speed of fp16 small rows and
# H16-8seqs, default vs tf32 (and bf16 for scale), then the SPEC-rule fuzz on fp16 cases with tf32 vs
# the default, and the fp16 gpu tests with tf32.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s11_round2.sh
source benchmarks/device_round_env.sh
export PYTHONPATH="$PWD/src" JAGATTN_AUTOTUNE=0
export F="python3 benchmarks/fuzz_spec_rule.py --scale 4 --device cuda --dtype fp16"
echo "== t=$((SECONDS-T0)) speed"
i=0
for v in "X=fp16-ieee --dtype fp16" "JAGATTN_GD_FP16_DOT=tf32 --dtype fp16" "X=bf16 --dtype bf16"; do
  i=$((i+1)); mkdir -p $OUT/speed$i; echo "-- $v"
  env ${v%% --*} timeout 150 python3 benchmarks/gated_delta_triton.py --out $OUT/speed$i --no-breakdown --no-fla \
    --profile-rows none --rows S-H4-2k,S-H16-4k,H16-8seqs ${v#* } 2>&1 | tee $OUT/speed$i/log.txt | grep -E "^S-|^H16|Error" | cut -c1-200
done
echo "== t=$((SECONDS-T0)) fp16 fuzz + gpu test"
job() { IFS='|' read -r a s <<< "$1"; r=$(env $a timeout 150 $F --op gated_delta --seed $s 2>&1 | grep -E "^FAIL|^fuzz|Error" | head -1 | cut -c1-400); echo "[var $a | r:$s] $r"; }
export -f job
( { for s in $(seq 400 439); do echo "JAGATTN_GD_FP16_DOT=tf32|$s"; echo "X=ieee|$s"; done; } \
  | timeout $((540 - (SECONDS-T0))) xargs -P 8 -d '\n' -n 1 bash -c 'job "$1"' _ > $OUT/precision.log 2>&1 ) &
JAGATTN_GD_FP16_DOT=tf32 timeout -s INT $((545 - (SECONDS-T0))) python3 -m pytest -q -m gpu -p no:cacheprovider -rA \
  "tests/test_gated_delta_triton.py::test_gpu_fp16_small" "tests/test_gated_delta_triton.py::test_gpu_opcheck" 2>&1 \
  | tee $OUT/fp16_tests.log | grep -E "^PASS|^FAIL|passed|failed" | tail -5
wait
for v in JAGATTN_GD_FP16_DOT=tf32 X=ieee; do echo "$v: $(grep -F "[var $v |" $OUT/precision.log | grep -c FAIL) of $(grep -cF "[var $v |" $OUT/precision.log) fail"; done
grep FAIL $OUT/precision.log | sed -E 's/exceeds 2.0x the input-dtype reference error/vs ref/' | cut -c1-300
echo "== t=$((SECONDS-T0)) done"
