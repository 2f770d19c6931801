# Session 14, round 6 (kind nvidia-h200): which forward tile the public attention call launches per suite row
# and each tile class's time (benchmarks/attention_fwd_tile_diag.py: the round-5 bench did not show the wide
# tile's gain, and causal-mean512-hkv4 read 0.58 ms against 0.32 before); the fp32 forward gpu tests with the
# last-resort tile (D = 256 raised OutOfResources in round 5).
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s14_round6.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 200 python3 benchmarks/attention_fwd_tile_diag.py 2>&1 | grep -v Warn | tee $OUT/tile_diag.log
PYTHONPATH=src timeout -s INT 150 python3 -m pytest -q -n 4 -m gpu -p no:cacheprovider -rA tests/test_attention_triton.py -k fp32 \
    2>&1 | tee $OUT/gpu_tests_fp32.log | grep -E "^PASS|^FAIL|passed|failed|^E  .*Error" | cut -c1-220 | tail -12
echo "elapsed $((SECONDS - T0)) s"
