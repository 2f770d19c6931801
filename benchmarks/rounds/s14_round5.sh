# Session 14, round 5 (kind nvidia-h200): the attention forward's wide tile (fwd.KEYS_WIDE, 128x128 on 8 warps)
# and the dtype-aware forward prune: the attention gpu tests (incl. the new wide-tile production cases and
# the fp32 forward at D = 64/128/256), then the attention suite against torch varlen_attn and FlexAttention.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s14_round5.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout -s INT 280 python3 -m pytest -q -n 4 -m gpu -p no:cacheprovider -rA tests/test_attention_triton.py \
    2>&1 | tee $OUT/gpu_tests_attention.log | grep -E "^PASS|^FAIL|^SKIP|passed|failed|^E  .*Error" | cut -c1-220 | tail -30
echo "== t=$((SECONDS-T0)) bench"
mkdir -p $OUT/bench
OUT=$OUT/bench timeout 290 bash benchmarks/run_device.sh --family attention --backends triton,torch_varlen,flex \
    2>&1 | grep -v Warn | tail -40
echo "elapsed $((SECONDS - T0)) s"
