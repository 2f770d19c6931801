# Session 40 round 3 (issue #5): the persistent dK/dV schedule with the work counter's ticket taken by one lane's
# relaxed tensor atomic (round 2's scalar acq_rel atomic stalled each item's start): persistent gpu tests, then the
# same-process A/B on B256 / B128 with per-kernel times.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s40_round3.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 120 python3 -m pytest -q -x -m gpu tests/test_hstu_triton.py -p no:cacheprovider \
    -k "persistent_dkdv" 2>&1 | tail -3
PYTHONPATH=src timeout 260 python3 benchmarks/src_variant_ab.py --family hstu --variants benchmarks/rounds/s40_persist_variants.py \
    --only persist --rows B256-N1024,B128-N2048 --repeats 3 --profile --out $OUT/ab 2>&1 | grep -v Warn | cut -c1-300
echo "elapsed $((SECONDS - T0)) s"
