# Session 18 round 5 (issue #5): the hstu suite against generative-recommenders' Triton HSTU (same run,
# JAGATTN_AUTOTUNE=0: first-listed configs) with the session's grid order and the short-rows forward list, then
# the HSTU gpu tests on that code.
# Call (kind nvidia-h100-x1, carry peers): JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s18_round5.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
timeout 300 bash benchmarks/run_device.sh --family hstu --backends triton,gr_triton \
    2>&1 | grep -v "Warn\|invalid_mask\|offs_m\|offs_n\|^  *[a-z_]* = \|^  *)" | tail -40 | cut -c1-220
echo "suite done $((SECONDS - T0)) s"
PYTHONPATH=src timeout -s INT 200 python3 -m pytest -q -m gpu tests/test_hstu_triton.py -p no:cacheprovider -rfE \
    2>&1 | tail -4
echo "elapsed $((SECONDS - T0)) s"
