# Session 26 round 11 (issue #5): the HSTU dK/dV kernel in Gluon. (1) HSTU gpu tests (the new Gluon ones, production
# sizes, determinism, opcheck, compile, threads); (2) same-process A/B vs the Triton dK/dV kernel on the four suite
# rows without a window (ctx6-w256 keeps the Triton kernel), per-kernel times.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s26_round11.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 300 python3 -m pytest -q -m gpu tests/test_hstu_triton.py -p no:cacheprovider \
    -k "gluon or production_sizes or deterministic or opcheck or compile or concurrent" > $OUT/gpu_tests.log 2>&1
grep -E "passed|failed|^E  |^FAILED" $OUT/gpu_tests.log | tail -20
echo "elapsed $((SECONDS - T0)) s"
PYTHONPATH=src timeout 220 python3 benchmarks/src_variant_ab.py --family hstu --repeats 3 --profile --out $OUT \
    --variants benchmarks/rounds/s26_hstu_variants.py --rows B256-N1024,B128-N2048,B64-N4096,recsys \
    2>&1 | grep -v Warn > $OUT/ab.log
grep -E "^row|: \{|default:|triton_dkdv:|g_n128w8:" $OUT/ab.log | cut -c1-150
grep -E "kernels of" $OUT/ab.log | cut -c1-130
echo "elapsed $((SECONDS - T0)) s"
