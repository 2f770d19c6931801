# Session 23 round 7 (issue #6): every gated delta gpu test on the tree with the two-loop FUSE_O default (6 processes).
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s23_round7.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src python3 benchmarks/gpu_tests_parallel.py --workers 6 --timeout 420 --out $OUT \
    tests/test_gated_delta_triton.py 2>&1 | tail -10
echo "elapsed $((SECONDS - T0)) s"
