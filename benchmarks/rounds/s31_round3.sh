# Session 31 round 3 (issue #5): the Gluon dK/dV kernel as the default in its scope. (1) every HSTU gpu test; (2)
# same-process A/B against the Triton dK/dV kernel and against both Triton kernels (--profile); (3) the hstu suite
# against generative-recommenders' Triton HSTU (peers/gr at the commit in peers/gr/COMMIT).
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s31_round3.sh   (carry peers)
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
export JAGATTN_GR_COMMIT=$(cat peers/gr/COMMIT 2>/dev/null)
PYTHONPATH=src timeout 200 python3 -m pytest -q -m gpu -p no:cacheprovider --tb=short -rfE tests/test_hstu_triton.py \
    > $OUT/gpu_tests.log 2>&1
grep -E "passed|failed|^E  .*Error|^FAILED" $OUT/gpu_tests.log | cut -c1-220 | tail -15
echo "elapsed $((SECONDS - T0)) s"
PYTHONPATH=src timeout 170 python3 benchmarks/src_variant_ab.py --family hstu --repeats 2 --out $OUT --profile \
    --variants benchmarks/rounds/s31_hstu_variants.py --rows B256-N1024,B128-N2048,recsys 2>&1 \
    | grep -v Warn > $OUT/ab_hstu.log
grep -hE "^row|: \{|x[01]\.[0-9]+\)|not applicable|rror" $OUT/ab_hstu.log | cut -c1-190
grep -hE "^row|kernels of one" $OUT/ab_hstu.log | sed 's/void at::native.*//' | cut -c1-230
echo "elapsed $((SECONDS - T0)) s"
mkdir -p $OUT/suite
OUT=$OUT/suite timeout 200 bash benchmarks/run_device.sh --family hstu --backends triton,gr_triton \
    > $OUT/suite_stdout.txt 2>&1
grep -v "^\[" $OUT/suite/log.txt | grep -E "^[A-Za-z0-9-]+:|^  (triton|gr)" | cut -c1-200
cd $OUT && tar czf suite.tgz suite suite_stdout.txt && rm -rf suite suite_stdout.txt
echo "elapsed $((SECONDS - T0)) s"
