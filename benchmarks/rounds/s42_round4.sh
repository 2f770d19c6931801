# Session 42 round 4 (issue #5): CTX_PLACE 3 against 0 (s42_place3_variants.py), then every HSTU + gluon gpu test on
# the defaults and the hstu suite against GR (carry peers). Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s42_round4.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 120 python3 benchmarks/src_variant_ab.py --family hstu --rows ctx6-w256 \
    --variants benchmarks/rounds/s42_place3_variants.py --repeats 3 --profile --out $OUT/ab 2>&1 | grep -v "^\[" | grep -v "warn" | tail -9
PYTHONPATH=src timeout 230 python3 benchmarks/gpu_tests_parallel.py --workers 4 --timeout 220 --out $OUT/tests \
    tests/test_hstu_triton.py tests/test_gluon.py 2>&1 | tail -5
grep -h -E "^FAILED|^ERROR" $OUT/tests/*.log 2>/dev/null | head -20
echo "tests $((SECONDS - T0)) s"
export JAGATTN_GR_COMMIT=$(cat peers/gr/COMMIT 2>/dev/null)
mkdir -p $OUT/suite1
OUT=$OUT/suite1 timeout 200 bash benchmarks/run_device.sh --family hstu --backends triton,gr_triton > $OUT/suite1_stdout.txt 2>&1
grep -v "^\[" $OUT/suite1/log.txt | grep -E "^[A-Za-z0-9-]+:|^  (triton|gr)" | cut -c1-200
echo "elapsed $((SECONDS - T0)) s"
cd $OUT && tar czf suite.tgz suite1 suite1_stdout.txt && rm -rf suite1 suite1_stdout.txt
