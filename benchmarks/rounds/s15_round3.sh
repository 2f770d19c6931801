# Session 15, round 3 (kind nvidia-h200): the fp32 route of tiny batches (_core/precision.py) on the GPU:
# (a) its gpu tests (every op at head dims 16..256, fp32 kernels incl. the new attention-backward and HSTU
#     small tiles) and the existing fp32 / D=256 gpu tests; (b) round 1's failing fuzz ranges again with the
#     route on its default (tiny batches of every op, gated delta bf16 at K=128/256); (c) its cost per call.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s15_round3.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
F="python3 benchmarks/fuzz_spec_rule.py --device cuda --isolate"
job() { set -- $1; PYTHONPATH=src timeout 280 $F --op $1 --first-seed $2 --cases 60 --scale $3 --time-budget 220 ${@:4} 2>&1 | grep -E "^FAIL|^fuzz|Error" | cut -c1-420 | sed "s/^/[$*] /"; }
export -f job; export F
printf '%s\n' "gated_delta 5000 4 --dtype bf16 --dims 256,64" "gated_delta 5000 4 --dtype bf16 --dims 128,64" \
  "gated_delta 5100 4 --dtype bf16 --dims 256,128" "gated_delta 6000 1 --cap-len 2" \
  "hstu 6000 1 --cap-len 2" "hstu 6100 1 --cap-len 3" "attention 6000 1 --cap-len 2" "attention 6100 1 --cap-len 3" \
  | xargs -P 8 -d '\n' -n 1 bash -c 'job "$1"' _ > $OUT/fuzz.log 2>&1 &
PYTHONPATH=src timeout 300 python3 -m pytest -q -m gpu -n 4 tests/test_fp32_route.py \
  "tests/test_hstu_triton.py::test_gpu_fp16_and_d256" "tests/test_attention_triton.py::test_gpu_fp32_forward" 2>&1 \
  | tail -25 | tee $OUT/gpu_tests.log
wait
cat $OUT/fuzz.log
PYTHONPATH=src timeout 150 python3 benchmarks/fp32_route_cost.py --iters 100 2>&1 | tee $OUT/cost.log
echo "elapsed $((SECONDS - T0)) s"
