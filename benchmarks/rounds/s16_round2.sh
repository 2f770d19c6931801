# Session 16, round 2 (kind nvidia-h200): the fp32-route gpu tests with the output gradients rounded for the gold
# too (tests/test_fp32_route.py's fixture), and the fp32 gpu tests of attention and HSTU.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s16_round2.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 420 python3 -m pytest -m gpu -q -p no:cacheprovider tests/test_fp32_route.py \
    2>&1 | grep -v Warn | tail -30 | tee $OUT/route_gpu_tests.log
echo "elapsed $((SECONDS - T0)) s"
