# Session 42 round 6 (issue #5): the final code (ctx_split with the peeled contextual step only): every HSTU + gluon
# gpu test, a GPU fuzz of the SPEC rule for HSTU on the defaults (the split where a batch has a window and 0 < C <= 16)
# in two processes, then the hstu suite against GR (carry peers).
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s42_round6.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 230 python3 benchmarks/gpu_tests_parallel.py --workers 4 --timeout 220 --out $OUT/tests \
    tests/test_hstu_triton.py tests/test_gluon.py 2>&1 | tail -5
grep -h -E "^FAILED|^ERROR" $OUT/tests/*.log 2>/dev/null | head -20
echo "tests $((SECONDS - T0)) s"
i=0
for dims in "" "--dims 128,128"; do
  i=$((i + 1))
  PYTHONPATH=src timeout 140 python3 benchmarks/fuzz_spec_rule.py --op hstu --device cuda --scale 16 --isolate \
      --first-seed $((42000 + 1000 * i)) --cases 300 --time-budget 105 $dims > $OUT/fuzz_hstu_$i.log 2>&1 &
done
wait
for i in 1 2; do echo "== $i"; grep -v Warn $OUT/fuzz_hstu_$i.log | tail -3 | cut -c1-400; done
echo "fuzz $((SECONDS - T0)) s"
export JAGATTN_GR_COMMIT=$(cat peers/gr/COMMIT 2>/dev/null)
mkdir -p $OUT/suite1
OUT=$OUT/suite1 timeout 200 bash benchmarks/run_device.sh --family hstu --backends triton,gr_triton > $OUT/suite1_stdout.txt 2>&1
grep -v "^\[" $OUT/suite1/log.txt | grep -E "^[A-Za-z0-9-]+:|^  (triton|gr)" | cut -c1-200
echo "elapsed $((SECONDS - T0)) s"
cd $OUT && tar czf suite.tgz suite1 suite1_stdout.txt && rm -rf suite1 suite1_stdout.txt
