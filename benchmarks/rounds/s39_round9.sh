# Session 39, rounds 8-9: every Triton / Gluon launch now goes through _core/launch.py (the eager fast launch):
# its gpu tests, then every gated delta gpu test (scalar gates) in 6 processes. Round 9: after the stale-grid fix.
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 60 python3 -m pytest -q -m gpu tests/test_launch.py 2>&1 | tail -2
mkdir -p $OUT/gpu
PYTHONPATH=src timeout 500 python3 benchmarks/gpu_tests_parallel.py --workers 6 --timeout 480 --out $OUT/gpu \
    tests/test_gated_delta_triton.py > $OUT/gpu_tests.log 2>&1
tail -8 $OUT/gpu_tests.log
grep -h -E "^FAILED|^E  .*Error|passed|failed" $OUT/gpu/gpu_tests_w*.log | cut -c1-300 | head -30
cd $OUT && tar czf gpu.tgz gpu && rm -rf gpu
echo "elapsed $((SECONDS - T0)) s"
