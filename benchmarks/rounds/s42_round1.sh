# Session 42 round 1 (issue #5): where ctx6-w256's backward time goes; the windowed dK/dV alternatives
# (s42_ctx6_variants.py). Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s42_round1.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 480 python3 benchmarks/src_variant_ab.py --family hstu --rows ctx6-w256 \
    --variants benchmarks/rounds/s42_ctx6_variants.py --repeats 3 --profile --out $OUT/ab 2>&1 | grep -v "^\[" | tail -40
echo "elapsed $((SECONDS - T0)) s"
