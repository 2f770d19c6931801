# Session 42 round 3 (issue #5): the dQ split's placement in the dK/dV kernel and the reduce kernel's shape
# (s42_place_variants.py), same process on ctx6-w256. Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s42_round3.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 400 python3 benchmarks/src_variant_ab.py --family hstu --rows ctx6-w256 \
    --variants benchmarks/rounds/s42_place_variants.py --repeats 3 --profile --out $OUT/ab 2>&1 | grep -v "^\[" | grep -v "warn" | tail -24
echo "elapsed $((SECONDS - T0)) s"
