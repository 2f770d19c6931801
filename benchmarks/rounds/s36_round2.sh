# Session 36 round 2: a GPU fuzz of every op on the current tree (the last ones: gated delta session 25, HSTU session
# 14, before the Gluon kernels), the three gated delta gpu tests round 1's worker 0 did not reach, and the fp32
# inference cost on H16-1seq (round 1 timed out after one row).
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s36_round2.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
export PYTHONPATH=$PWD/src
F="python3 benchmarks/fuzz_spec_rule.py --device cuda --isolate --time-budget 420"
mkdir -p $OUT/fuzz
$F --op attention --scale 4 --cases 400 --first-seed 36000 > $OUT/fuzz/attention_a.log 2>&1 &
$F --op attention --scale 16 --cases 400 --first-seed 36500 > $OUT/fuzz/attention_b.log 2>&1 &
$F --op hstu --scale 4 --cases 400 --first-seed 36000 > $OUT/fuzz/hstu_a.log 2>&1 &
JAGATTN_HSTU_GLUON=1 $F --op hstu --scale 16 --cases 400 --first-seed 36500 > $OUT/fuzz/hstu_gluon.log 2>&1 &
$F --op gated_delta --scale 4 --cases 400 --first-seed 36000 --rounded-grads > $OUT/fuzz/gd_a.log 2>&1 &
$F --op gated_delta --scale 4 --cases 400 --first-seed 36500 > $OUT/fuzz/gd_b.log 2>&1 &
timeout 460 python3 -m pytest -q -p no:cacheprovider -rfE \
    "tests/test_gated_delta_triton.py::test_gpu_opcheck_keep_t[T-input-norm-on-load]" \
    "tests/test_gated_delta_triton.py::test_gpu_opt_in_variant_bf16[wu-lowp-u]" \
    "tests/test_gated_delta_triton.py::test_gpu_nonfinite_sequence_isolated" > $OUT/gpu_tests_rest.log 2>&1 &
wait
tail -3 $OUT/gpu_tests_rest.log
for f in $OUT/fuzz/*.log; do echo "== $(basename $f): $(grep -c '^FAIL' $f) FAIL lines"; grep -E "^FAIL|^fuzz|rule noise|Error" $f | cut -c1-400 | head -12; tail -2 $f; done
echo "elapsed $((SECONDS - T0)) s"
PYTHONPATH=src timeout $((590 - SECONDS + T0)) python3 benchmarks/fp32_recurrent_cost.py --rows H16-1seq --repeats 1 --out $OUT 2>&1 | grep -v Warn
echo "elapsed $((SECONDS - T0)) s"
