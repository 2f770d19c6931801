# Session 53's device round: fp32 training on the token loop made the default (backends.FP32_TRAIN = "recurrent").
#   tests  the fp32-training tests, the gated delta routing / reason tests and the autograd tests on the GPU
#          (JAGATTN_POISON=1): everything the default change touches
#   fuzz   fuzz_spec_rule.py --device cuda --dtype fp32 (fp32 gradients, now on the token loop by default) for gated
#          delta with and without gk, 100 s each
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s53_next.sh [tests|fuzz|all]
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
what=${1:-all}
if [ "$what" = tests ] || [ "$what" = all ]; then
  JAGATTN_POISON=1 PYTHONPATH=src timeout 300 python3 -m pytest -q -p no:cacheprovider -rfE \
      tests/test_gated_delta_fp32_train.py tests/test_autograd.py \
      tests/test_gated_delta_triton.py -k "fp32 or reason or routing or chosen or fp32_train" 2>&1 \
      | grep -v "DEBUG\|Warn" | tail -30 | tee $OUT/tests.txt
fi
if [ "$what" = fuzz ] || [ "$what" = all ]; then
  for op in gated_delta gated_delta_gk; do
    PYTHONPATH=src timeout 130 python3 benchmarks/fuzz_spec_rule.py --device cuda --dtype fp32 --op $op \
        --first-seed 53000 --cases 400 --time-budget 100 2>&1 | grep -v Warn | tail -8 | tee $OUT/fuzz_$op.txt
  done
fi
echo "rc=$? elapsed $((SECONDS - T0)) s"
