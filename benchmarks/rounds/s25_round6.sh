# (The premise was a misread: round 5 printed dg 4.1e-07 apart, cut to "4.1" after 150 characters; round 8 showed it.)
# Session 25 round 6 (issue #6): round 5's one-key-block dqkwg configs gave dg 4-6x its max off at H16 (HV == H,
# l2norm: k's l2norm backward in the WY kernel) while passing at GVA 2; K = 64 takes one key block by default.
# round 6: test_gpu_hv_eq_h_key_blocks (first version) at 4 heads, 8192 tokens, g_shift 3 (K 64 / 128 / 128 at one key block, FUSE_K_L2N auto / off) against the reference.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s25_round6.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 500 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_gated_delta_triton.py \
    -k "hv_eq_h_key_blocks" 2>&1 | grep -v Warn | tee $OUT/r6.log | grep -E "passed|failed|FAILED|exceeds|^E " | cut -c1-300 | head -30
echo "elapsed $((SECONDS - T0)) s"
