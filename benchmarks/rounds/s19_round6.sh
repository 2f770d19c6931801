# Session 19 round 6 (issue #6): the gated_delta suite against FLA 0.6.0 (same run; FLA's backward with its
# version gate bypassed, labelled unverified), then the two gated delta gpu tests that round 5's parallel run
# lost to out-of-memory (six processes sharing the GPU), alone.
# Call (kind nvidia-h100-x1, carry .whl): JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s19_round6.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
timeout 300 bash benchmarks/run_device.sh --family gated_delta --backends triton,fla \
    2>&1 | grep -v "Warn\|warn\|^\[" | tail -45 | cut -c1-220
echo "suite done $((SECONDS - T0)) s"
PYTHONPATH=src timeout -s INT $((585 - SECONDS + T0)) python3 -m pytest -q -p no:cacheprovider -rfE --durations=3 \
    "tests/test_gated_delta_gk.py::test_gpu_gk_production_bf16[gk-32k-8seqs-gva2]" \
    tests/test_gated_delta_triton.py::test_gpu_every_launch_config_same_result 2>&1 | tail -8
echo "elapsed $((SECONDS - T0)) s"
