# Session 15, round 5 (kind nvidia-h200): the fp32 route's gpu tests alone (every op x six head-dim pairs,
# two seeds each; round 4 cut them at 240 s), the GPU fuzz of tiny batches with the route on (attention,
# gated delta; --rounded-grads), and the route's cost with the gated delta limit at 1024 token-heads.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s15_round5.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
F="python3 benchmarks/fuzz_spec_rule.py --device cuda --isolate"
job() { set -- $1; PYTHONPATH=src timeout 330 $F --op $1 --first-seed $2 --cases 40 --scale $3 --time-budget 300 ${@:4} 2>&1 | grep -E "^FAIL|^fuzz|Error" | cut -c1-460 | sed "s/^/[auto $*] /"; }
export -f job; export F
printf '%s\n' "attention 6000 1 --cap-len 2 --rounded-grads" "gated_delta 6000 1 --cap-len 2 --rounded-grads --dtype bf16" \
  | xargs -P 2 -d '\n' -n 1 bash -c 'job "$1"' _ > $OUT/fuzz.log 2>&1 &
PYTHONPATH=src timeout 360 python3 -m pytest -q -m gpu -n 6 tests/test_fp32_route.py 2>&1 | grep -v -i warn | tail -30 | tee $OUT/gpu_tests.log
wait
cat $OUT/fuzz.log
PYTHONPATH=src timeout 120 python3 benchmarks/fp32_route_cost.py --iters 50 2>&1 | tee $OUT/cost.log
echo "elapsed $((SECONDS - T0)) s"
