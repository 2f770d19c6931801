# Prepared in session 20, not run (device time spent) - a first round for the next session (issue #4): the two
# mean-8192 attention rows are the backward's worst (0.98-1.04x Flex) and the only ones on the long-keys dK/dV tile
# (64x128, 8 warps), where the TMA q/dO loads did not help; the shorter rows' 64x64 4-warp tile gained 8-13% from
# them. Same-process A/B (benchmarks/rounds/s20_variants.py): no_long (the short rows' tile + TMA + head-major with
# GQA), no_long_rows (the same, slot-major grid), tma_long (the long tile + TMA, the control). Then, if one wins,
# move LONG_KEYS_MIN or the tile order accordingly and re-run the attention suite.
# Call (kind nvidia-h100-x1): JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s20_prepared_next.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 400 python3 benchmarks/src_variant_ab.py --family attention \
    --variants benchmarks/rounds/s20_variants.py --only no_long,no_long_rows,tma_long --out $OUT --repeats 4 \
    --rows causal-mean8192-hkv4,causal-mean8192-hkv16 \
    2>&1 | grep -v "^\[\|Warn\|warn" | tee $OUT/ab.log | cut -c1-170
echo "elapsed $((SECONDS - T0)) s"
