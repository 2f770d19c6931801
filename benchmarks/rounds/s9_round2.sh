# Prepared in session 8 for session 9 (kind nvidia-h200-x2, timeout_s 300): the two-GPU device-guard test
# of the eager fast path (inputs on cuda:1 while cuda:0 is current, every family, fast path and
# dispatcher; never run: session 8 had no device time left to start a two-GPU machine), then the random
# SPEC-rule fuzz on the device's Triton (bf16/fp16, lengths x4) for what is left of the call.
# Call: JAGATTN_GIT_SHA=<full sha> bash benchmarks/rounds/s9_round2.sh
source benchmarks/device_round_env.sh
nvidia-smi -L | tee -a $OUT/env.txt
JAGATTN_AUTOTUNE=0 PYTHONPATH="$PWD/src" timeout -s INT 150 python3 -m pytest -q -m gpu tests/test_eager_fast.py \
  -k non_current_device -p no:cacheprovider -rA 2>&1 | tee $OUT/tests.log | grep -E "PASS|FAIL|Error|passed|failed"
echo "== t=$((SECONDS-T0)) fuzz"
JAGATTN_AUTOTUNE=0 PYTHONPATH="$PWD/src" timeout -s INT $((280 - (SECONDS-T0))) python3 benchmarks/fuzz_spec_rule.py \
  --cases 1000 --scale 4 --time-budget $((250 - (SECONDS-T0))) 2>&1 | grep -v -i warn | tee $OUT/fuzz.log | tail -15
echo "== t=$((SECONDS-T0)) done"
