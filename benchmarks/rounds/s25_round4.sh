# Session 25 round 4 (issue #6): slow gates (g = logsigmoid(randn + 6): a chunk decays by ~0.77, where the default
# +1 decays it by ~e^-25 and the gate gradient's carried-state terms vanish). Every gated delta gpu test (with the
# new test_gpu_production_slow_gates, bf16 and fp16 at 32k tokens), then the fuzz at --g-shift 6 (bf16, scale 4)
# for ours and FLA 0.6.0 (its gated backward guard bypassed) on the same seeds.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s25_round4.sh (carry .whl)
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl 2>&1 | tail -1
mkdir -p $OUT/tests
PYTHONPATH=src python3 benchmarks/gpu_tests_parallel.py --workers 6 --timeout 330 --out $OUT/tests \
    tests/test_gated_delta_triton.py 2>&1 | tail -8
grep -h -E "FAILED|Error|exceeds" $OUT/tests/*.log 2>/dev/null | head -20 | cut -c1-400
echo "elapsed $((SECONDS - T0)) s"
export PYTHONPATH="$PWD/src:/tmp/site"
export F="python3 benchmarks/fuzz_spec_rule.py --scale 4 --device cuda --dtype bf16 --g-shift 6 --rounded-grads"
job() {
  IFS='|' read -r peer seed <<< "$1"
  r=$(timeout 200 $F --op gated_delta --seed $seed --peer $peer 2>&1 | grep -E "^FAIL|^fuzz|Error" | head -2 | tr '\n' ' ' | cut -c1-500)
  echo "[$peer seed $seed] $r"
}
export -f job
{ for s in 0 1 2 3 4 5 6 7; do echo "jagattn|$s"; echo "fla|$s"; done; } > $OUT/jobs.txt
timeout $((590 - SECONDS + T0)) xargs -P 8 -d '\n' -n 1 bash -c 'job "$1"' _ < $OUT/jobs.txt > $OUT/fuzz.log 2>&1
sort $OUT/fuzz.log
for p in jagattn fla; do echo "-- $p: $(grep -F "[$p " $OUT/fuzz.log | grep -c FAIL) FAIL lines of $(grep -cF "[$p " $OUT/fuzz.log) cases"; done
tar czf $OUT/tests.tgz -C $OUT tests && rm -rf $OUT/tests
echo "elapsed $((SECONDS - T0)) s"
