# Session 19 round 13 (issue #4): round 12's two failing attention gpu tests (opcheck, compile: fwd.use_tma read
# the data pointer of the fake tensors Inductor lowers the op with) after the fix, with the TMA test.
# Call (kind nvidia-h100-x1): JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s19_round13.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout -s INT 240 python3 -m pytest -q -m gpu tests/test_attention_triton.py -p no:cacheprovider -rfE \
    -k "opcheck or compile or tma or deterministic" 2>&1 | tee $OUT/gpu_tests.log | tail -5
echo "elapsed $((SECONDS - T0)) s"
