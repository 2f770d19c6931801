# Session 41 round 4 (issue #5; round 5 reruns it on the final code): every HSTU gpu test on the defaults, then the
# hstu suite against generative-recommenders' Triton HSTU (as s31_round5.sh, one run).
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s41_round4.sh   (carry peers)
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 200 python3 benchmarks/gpu_tests_parallel.py --workers 4 --timeout 190 --out $OUT/tests \
    tests/test_hstu_triton.py tests/test_gluon.py 2>&1 | tail -6
echo "tests $((SECONDS - T0)) s"
export JAGATTN_GR_COMMIT=$(cat peers/gr/COMMIT 2>/dev/null)
mkdir -p $OUT/suite1
OUT=$OUT/suite1 timeout 300 bash benchmarks/run_device.sh --family hstu --backends triton,gr_triton > $OUT/suite1_stdout.txt 2>&1
grep -v "^\[" $OUT/suite1/log.txt | grep -E "^[A-Za-z0-9-]+:|^  (triton|gr)" | cut -c1-200
echo "elapsed $((SECONDS - T0)) s"
cd $OUT && tar czf suite.tgz suite1 suite1_stdout.txt && rm -rf suite1 suite1_stdout.txt
