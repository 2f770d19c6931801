# Session 35 round 7 (issue #6): bwd_dqkwg at (64, 4, 2, 64) by default for rows of at most 256 bytes (bf16 at
# K <= 128) against the old default (32, 4, 3, 64) on the rows round 6 did not cover, then the gpu tests that vary
# the dqkwg config, fp16 and slow gates.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s35_round7.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 110 python3 benchmarks/gd_switch_ab.py --out $OUT --rows H16-1seq,H16-64seqs,H32-8seqs \
    --repeats 2 --switch "config:default|bwd_dqkwg=32,4,3,64" 2>&1 | grep -v Warn | tee $OUT/ab.log \
    | grep -E "value=|fwd .* bwd|dqkwg" | cut -c1-300
echo "elapsed $((SECONDS - T0)) s"
PYTHONPATH=src timeout 150 python3 -m pytest -q -x tests/test_gated_delta_triton.py \
    -k "fp16_small or hv_eq_h_key_blocks or slow_gates" 2>&1 | tail -5 | tee $OUT/gpu_tests.log
echo "elapsed $((SECONDS - T0)) s"
