# Session 10, device call 6 (kind nvidia-h200): same-run A/B of the small rows (bf16 precise path by
# default vs JAGATTN_GD_BF16_PRECISE=off), then the gated delta gpu tests (-n 4).
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s10_round6.sh
source benchmarks/device_round_env.sh
export PYTHONPATH="$PWD/src" JAGATTN_AUTOTUNE=0
echo "== t=$((SECONDS-T0)) speed A/B"
for i in 0 1 2 3; do
  v=$([[ $((i % 2)) == 0 ]] && echo X=auto || echo JAGATTN_GD_BF16_PRECISE=off)
  mkdir -p $OUT/speed$i; echo "-- $v"
  env $v timeout 60 python3 benchmarks/gated_delta_triton.py --out $OUT/speed$i --no-breakdown --no-fla --profile-rows none \
    --rows S-H4-2k,S-H8-8k,S-H16-4k,S-H16-4k-1seq 2>&1 | tee $OUT/speed$i/log.txt | grep -E "^S-|Error" | cut -c1-200
done
echo "== t=$((SECONDS-T0)) gd gpu tests"
timeout -s INT $((580 - (SECONDS-T0))) python3 -m pytest -q -n 4 -m gpu tests/test_gated_delta_triton.py -p no:cacheprovider -rA 2>&1 \
  | tee $OUT/gd_tests.log | grep -E "^PASS|^FAIL|^ERROR|passed|failed" | cut -c1-160 | tail -30
echo "== t=$((SECONDS-T0)) done"
