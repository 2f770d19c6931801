# Session 20 round 7 (issue #4): the final attention tree (dK/dV q/dO TMA off for the long-keys tile; the TMA
# guards moved to _core/tma.py): the TMA gpu tests, opcheck, compile and the bf16 production sizes.
# Call (kind nvidia-h100-x1): JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s20_round7.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 400 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_attention_triton.py \
    -k "tma or opcheck or compile or production_sizes" 2>&1 | tail -4
echo "elapsed $((SECONDS - T0)) s"
