# Session 30 round 2 (issue #4): the Gluon dQ kernel (64x64, 2 stages, 4 warps, deferred dQ wait) as the default.
# (1) every attention gpu test (Gluon == Triton bitwise incl. the dQ kernel, isolation, determinism, compile,
# opcheck, export, production sizes); (2) same-process A/B against the Triton dQ kernel, no deferral, 32-key tiles.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s30_round2.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 330 python3 benchmarks/gpu_tests_parallel.py --workers 3 --timeout 320 --out $OUT \
    tests/test_attention_triton.py tests/test_export.py tests/test_eager_fast.py tests/test_fp32_route.py
grep -hE "^FAILED|^E  .*Error" $OUT/gpu_tests_w*.log | cut -c1-200 | head -20
echo "elapsed $((SECONDS - T0)) s"
PYTHONPATH=src timeout 240 python3 benchmarks/src_variant_ab.py --family attention --repeats 2 --out $OUT --profile \
    --variants benchmarks/rounds/s30_dq_variants.py --only triton_dq,nodefer,g64x32s2w4,g64x32s3w4 \
    --rows causal-mean8192-hkv16,skewed,causal-mean2048-hkv4,window1024-mean8192 2>&1 \
    | grep -v Warn > $OUT/ab_attention.log
grep -hE "^row|: \{|x[01]\.[0-9]+\)|not applicable|rror" $OUT/ab_attention.log | cut -c1-190
grep -hE "^row|kernels of one" $OUT/ab_attention.log | sed 's/void at::native.*//' | cut -c1-190
cd $OUT && tar czf gpu_tests.tgz gpu_tests_w*.log && rm -f gpu_tests_w*.log
echo "elapsed $((SECONDS - T0)) s"
