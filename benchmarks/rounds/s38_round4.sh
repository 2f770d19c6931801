# Session 38 round 4: dqk's hoisted state terms (chunk_gk.DQK_HOIST, opt-in JAGATTN_GK_DQK_HOIST=1) and dqk over
# 64 key columns against the round-2 default (kkt at 2 warps); the gk gpu tests with the hoist on.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s38_round4.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 200 python3 benchmarks/gk_diag_check.py --out $OUT --only kkt2w,hoist,dqk64,hoist-dqk64 2>&1 | tee $OUT/gk_diag_check.log | cut -c1-330
echo "elapsed $((SECONDS - T0)) s"
JAGATTN_GK_DQK_HOIST=1 PYTHONPATH=src timeout 300 python3 benchmarks/gpu_tests_parallel.py --workers 3 --timeout 280 --out $OUT tests/test_gated_delta_gk.py 2>&1 | tail -5
echo "elapsed $((SECONDS - T0)) s"
