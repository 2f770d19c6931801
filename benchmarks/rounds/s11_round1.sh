# Prepared in session 10 for session 11's first device call (kind nvidia-h200, timeout_s 590):
# (1) where the bf16 precise path's dg outliers sit on the 32k single sequence (both paths, in parallel);
# (2) the gated delta gpu tests under the final precise rule (at most 4096 tokens and 65536 token-heads;
#     never run on the GPU in session 10) with the gk gpu tests; (3) the SPEC-rule fuzz on more random
#     seeds (350-409) while the tests run.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s11_round1.sh
source benchmarks/device_round_env.sh
export PYTHONPATH="$PWD/src" JAGATTN_AUTOTUNE=0
export F="python3 benchmarks/fuzz_spec_rule.py --scale 4 --device cuda"
echo "== t=$((SECONDS-T0)) dg outliers, 32k single sequence"
for p in on off; do
  JAGATTN_GD_BF16_PRECISE=$p timeout 240 python3 benchmarks/gated_delta_dg_outliers.py > $OUT/dg_outliers_$p.log 2>&1 &
done
wait; cat $OUT/dg_outliers_on.log $OUT/dg_outliers_off.log | cut -c1-400
echo "== t=$((SECONDS-T0)) gd + gk gpu tests, fuzz"
job() { r=$(timeout 150 $F --op gated_delta --seed $1 2>&1 | grep -E "^FAIL|^fuzz|Error" | head -1 | cut -c1-400); echo "[r:$1] $r"; }
export -f job
( seq 350 409 | timeout $((560 - (SECONDS-T0))) xargs -P 6 -n 1 bash -c 'job "$1"' _ > $OUT/precision.log 2>&1 ) &
timeout -s INT $((570 - (SECONDS-T0))) python3 -m pytest -q -n 4 -m gpu tests/test_gated_delta_triton.py tests/test_gated_delta_gk.py \
  -p no:cacheprovider -rA 2>&1 | tee $OUT/gd_tests.log | grep -E "^PASS|^FAIL|^ERROR|passed|failed" | cut -c1-160 | tail -30
wait
echo "random: $(grep -c FAIL $OUT/precision.log) of $(grep -c . $OUT/precision.log) fail"
grep -v "0/1 failed" $OUT/precision.log | sed -E 's/exceeds 2.0x the input-dtype reference error/vs ref/' | cut -c1-300
echo "== t=$((SECONDS-T0)) done"
