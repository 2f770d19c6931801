# Session 36 round 6: the gpu tests of every other module on the current tree (attention, HSTU, gated delta gk,
# export, fp32 route), 8 processes sharing the GPU (the gated delta scalar-gate ones ran in rounds 1-2).
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s36_round6.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
mkdir -p $OUT/gpu
PYTHONPATH=src timeout 560 python3 benchmarks/gpu_tests_parallel.py --workers 8 --timeout 540 --out $OUT/gpu \
    tests/test_attention_triton.py tests/test_hstu_triton.py tests/test_gated_delta_gk.py tests/test_export.py \
    tests/test_fp32_route.py > $OUT/gpu_tests.log 2>&1
tail -10 $OUT/gpu_tests.log
grep -h -E "^FAILED|^ERROR|^E  .*Error" $OUT/gpu/gpu_tests_w*.log | cut -c1-300 | head -30
cd $OUT && tar czf gpu.tgz gpu && rm -rf gpu
echo "elapsed $((SECONDS - T0)) s"
