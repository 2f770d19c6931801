# Session 31 round 10: the host-path trims (commit 2b50e83: _core/env.py, library.py, dispatch.py, varlen.py) touch
# every op's eager path; run the export tests and the attention / gated delta compile, opcheck, determinism and
# production-size gpu tests on the device (the HSTU ones passed in round 9).
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s31_round10.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 200 python3 -m pytest -q -m gpu -p no:cacheprovider --tb=short -rfE tests/test_export.py \
    tests/test_attention_triton.py tests/test_gated_delta_triton.py \
    -k "export or test_gpu_opcheck or compile_fullgraph" > $OUT/gpu_tests.log 2>&1
grep -E "passed|failed|^E  .*Error|^FAILED" $OUT/gpu_tests.log | cut -c1-220 | tail -15
echo "elapsed $((SECONDS - T0)) s"
