# Session 30 round 7 (issue #5): the HSTU Gluon dQ kernel as the default. (1) every HSTU gpu test; (2) the hstu suite
# against generative-recommenders' Triton HSTU (peers/gr at the commit in peers/gr/COMMIT).
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s30_round7.sh   (carry peers)
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
export JAGATTN_GR_COMMIT=$(cat peers/gr/COMMIT 2>/dev/null)
PYTHONPATH=src timeout 260 python3 -m pytest -q -m gpu -p no:cacheprovider --tb=short -rfE tests/test_hstu_triton.py \
    > $OUT/gpu_tests.log 2>&1
grep -E "passed|failed|^E  .*Error|^FAILED" $OUT/gpu_tests.log | cut -c1-220 | tail -15
echo "elapsed $((SECONDS - T0)) s"
mkdir -p $OUT/suite
OUT=$OUT/suite timeout 300 bash benchmarks/run_device.sh --family hstu --backends triton,gr_triton \
    > $OUT/suite_stdout.txt 2>&1
grep -v "^\[" $OUT/suite/log.txt | grep -E "^[A-Za-z0-9-]+:|^  (triton|gr)" | cut -c1-200
cd $OUT && tar czf suite.tgz suite suite_stdout.txt && rm -rf suite suite_stdout.txt
echo "elapsed $((SECONDS - T0)) s"
