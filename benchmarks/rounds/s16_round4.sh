# Session 16, round 4 (kind nvidia-h200): attention gpu tests after the dK/dV change (q^T tile, delta after dV),
# then the fp32-route attention cases.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s16_round4.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 330 python3 -m pytest -m gpu -q -p no:cacheprovider tests/test_attention_triton.py \
    2>&1 | grep -v Warn | tail -15 | tee $OUT/attention_gpu_tests.log
echo "elapsed $((SECONDS - T0)) s"
PYTHONPATH=src timeout 120 python3 -m pytest -m gpu -q -p no:cacheprovider tests/test_fp32_route.py -k attention \
    2>&1 | grep -v Warn | tail -8 | tee $OUT/route_attention_gpu_tests.log
echo "elapsed $((SECONDS - T0)) s"
