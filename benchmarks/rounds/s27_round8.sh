# Session 27 round 8 (issues #4, #5): (1) the HSTU Gluon gpu tests (the shared host-descriptor helper now caches its
# shared layouts); (2) the attention suite again, same code as round 6, for the run-to-run spread.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s27_round8.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 200 python3 -m pytest -q -m gpu tests/test_hstu_triton.py tests/test_gluon.py -p no:cacheprovider \
    -k "gluon" > $OUT/gpu_tests.log 2>&1
grep -E "passed|failed|^E  |^FAILED" $OUT/gpu_tests.log | tail -15
echo "elapsed $((SECONDS - T0)) s"
mkdir -p $OUT/suite
OUT=$OUT/suite timeout 280 bash benchmarks/run_device.sh --family attention --backends triton,torch_varlen,flex \
    > $OUT/suite_stdout.txt 2>&1
grep -v "^\[" $OUT/suite/log.txt | grep -E "^[a-z0-9-]+:|^  (triton|torch_varlen|flex)" | cut -c1-200
cd $OUT && tar czf suite.tgz suite suite_stdout.txt && rm -rf suite suite_stdout.txt
echo "elapsed $((SECONDS - T0)) s"
