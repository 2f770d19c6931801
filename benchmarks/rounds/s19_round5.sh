# Session 19 round 5: (issue #5) the hstu suite against generative-recommenders' Triton HSTU, same run, with
# the session's kernels (scalar block pointers, edge masks without the range term; prescale dropped); then
# (issues #5, #6) the HSTU and gated delta gpu tests in six parallel pytest processes
# (benchmarks/gpu_tests_parallel.py: the gated delta ones are host-bound in the reference recurrence).
# Call (kind nvidia-h100-x1, carry peers): JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s19_round5.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
timeout 200 bash benchmarks/run_device.sh --family hstu --backends triton,gr_triton \
    2>&1 | grep -v "Warn\|invalid_mask\|offs_m\|offs_n\|^  *[a-z_]* = \|^  *)\|^\[" | tail -34 | cut -c1-200
echo "suite done $((SECONDS - T0)) s"
PYTHONPATH=src python3 benchmarks/gpu_tests_parallel.py --workers 6 --timeout $((580 - SECONDS + T0)) --out $OUT \
    tests/test_hstu_triton.py tests/test_gated_delta_triton.py tests/test_gated_delta_gk.py
echo "elapsed $((SECONDS - T0)) s"
