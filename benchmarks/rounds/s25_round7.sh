# (The premise was a misread: round 5 printed dg 4.1e-07 apart, cut to "4.1" after 150 characters; round 8 showed it.)
# Session 25 round 7 (issue #6): test_gpu_hv_eq_h_key_blocks rewritten at round 5's head count (16, HV == H) and
# gates (logsigmoid(randn)), 5 x 1024 tokens (the speed path), against the reference.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s25_round7.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 520 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_gated_delta_triton.py \
    -k "hv_eq_h_key_blocks" 2>&1 | grep -v Warn | tee $OUT/r7.log | grep -E "passed|failed|FAILED|exceeds|^E " | cut -c1-300 | head -30
echo "elapsed $((SECONDS - T0)) s"
