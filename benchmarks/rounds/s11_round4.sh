# Session 11, round 4 (kind nvidia-h200, timeout_s 590): fp16 at production sizes (new
# test_gpu_production_fp16) on the default split-tf32 path and on the experimental half path
# (JAGATTN_GD_FP16_PATH=half: bf16's speed structure in fp16); the half path's speed next to bf16 and
# its SPEC-rule fuzz on small random fp16 cases.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s11_round4.sh
source benchmarks/device_round_env.sh
export PYTHONPATH="$PWD/src" JAGATTN_AUTOTUNE=0
echo "== t=$((SECONDS-T0)) fp16 production tests, split and half (background)"
for p in split half; do
  JAGATTN_GD_FP16_PATH=$p timeout -s INT 520 python3 -m pytest -q -n 3 -m gpu -p no:cacheprovider -rA \
    tests/test_gated_delta_triton.py -k production_fp16 > $OUT/prod_fp16_$p.log 2>&1 &
done
echo "== t=$((SECONDS-T0)) speed"
i=0
for v in "JAGATTN_GD_FP16_PATH=half --dtype fp16" "X=bf16 --dtype bf16"; do
  i=$((i+1)); mkdir -p $OUT/speed$i; echo "-- $v"
  env ${v%% --*} timeout 150 python3 benchmarks/gated_delta_triton.py --out $OUT/speed$i --no-breakdown --no-fla \
    --profile-rows none --rows S-H4-2k,S-H16-4k,H16-8seqs --${v#* --} 2>&1 | tee $OUT/speed$i/log.txt | grep -E "^S-|^H16|Error" | cut -c1-200
done
echo "== t=$((SECONDS-T0)) fp16 half fuzz"
export F="python3 benchmarks/fuzz_spec_rule.py --scale 4 --device cuda --dtype fp16"
job() { r=$(JAGATTN_GD_FP16_PATH=half timeout 150 $F --op gated_delta --seed $1 2>&1 | grep -E "^FAIL|^fuzz|Error" | head -1 | cut -c1-400); echo "[r:$1] $r"; }
export -f job
( seq 400 439 | timeout $((530 - (SECONDS-T0))) xargs -P 4 -n 1 bash -c 'job "$1"' _ > $OUT/precision.log 2>&1 ) &
wait
for p in split half; do echo "-- production fp16 $p"; grep -E "^PASS|^FAIL|passed|failed|^E  .*Error" $OUT/prod_fp16_$p.log | cut -c1-300 | tail -8; done
echo "half fuzz: $(grep -c FAIL $OUT/precision.log) fail, $(grep -c 'fuzz:' $OUT/precision.log) pass"
grep FAIL $OUT/precision.log | sed -E 's/exceeds 2.0x the input-dtype reference error/vs ref/' | cut -c1-250 | head -20
echo "== t=$((SECONDS-T0)) done"
