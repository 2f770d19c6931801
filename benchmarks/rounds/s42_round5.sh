# Session 42 round 5 (issue #5): the split dK/dV kernel's configs on ctx6-w256 (s42_ctxcfg_variants.py, same process).
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s42_round5.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 280 python3 benchmarks/src_variant_ab.py --family hstu --rows ctx6-w256 \
    --variants benchmarks/rounds/s42_ctxcfg_variants.py --repeats 2 --profile --out $OUT/ab 2>&1 | grep -v "^\[" | grep -v "warn" | grep -E "kernels|fwd .* bwd|ERROR" | sed -e 's/void at::native::vectorized_elementwise_kernel<8, at::native::CUDAFunc [0-9.]*,\? \?//' | cut -c1-190
echo "elapsed $((SECONDS - T0)) s"
