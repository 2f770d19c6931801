# Session 32 round 8 (issue #6): the gpu tests that run the forward's fused state pass (FUSE_WU / FUSE_O at V blocks of
# 64: many chains) with the X factor on the narrow side now in the library, plus opcheck and compile; 6 processes.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s32_round8.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
mkdir -p $OUT/gpu
K="odd-multihead or many-chains or fuse_o or hv_eq_h or every_launch_config or opcheck or compile or fp16_small"
PYTHONPATH=src timeout 330 python3 benchmarks/gpu_tests_parallel.py --workers 6 --timeout 320 --out $OUT/gpu -k "$K" \
    tests/test_gated_delta_triton.py > $OUT/gpu_tests.log 2>&1
tail -8 $OUT/gpu_tests.log
grep -h -E "^FAILED|^E  .*Error" $OUT/gpu/gpu_tests_w*.log | cut -c1-300 | head -30
cd $OUT && tar czf gpu.tgz gpu && rm -rf gpu
echo "elapsed $((SECONDS - T0)) s"
