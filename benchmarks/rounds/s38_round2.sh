# Session 38 round 2: the gk defaults after round 1 (kkt at 2 warps, the token loop up to 32 tokens with gk):
# the gk gpu tests, launch settings + per-kernel profile, a GPU fuzz of gk.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s38_round2.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 200 python3 -m pytest -q -m gpu tests/test_gated_delta_gk.py -p no:cacheprovider 2>&1 | tee $OUT/gk_gpu_tests.log | tail -15
echo "elapsed $((SECONDS - T0)) s"
PYTHONPATH=src timeout 150 python3 benchmarks/gk_diag_check.py --out $OUT --only 4w,kkt2w,kkt1w --profile 2>&1 | tee $OUT/gk_diag_check.log | cut -c1-330
echo "elapsed $((SECONDS - T0)) s"
PYTHONPATH=src timeout 200 python3 benchmarks/fuzz_spec_rule.py --op gated_delta_gk --device cuda --scale 4 --first-seed 38000 --cases 200 --time-budget 170 --isolate 2>&1 | tee $OUT/gk_fuzz.log | tail -8
echo "elapsed $((SECONDS - T0)) s"
