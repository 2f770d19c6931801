# Session 40 round 8 (issue #5): the persistent Gluon dQ schedule (bwd_gluon.DQ_PERSIST; no spill on Triton 3.6,
# unlike round 2-5's dK/dV one): its gpu tests (dq bitwise the per-item kernel's) and the refactored per-item dQ kernel's
# (test_gpu_gluon[dq-*], isolation), then the same-process A/B on B256 / B128 / ctx6 / recsys with per-kernel times.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s40_round8.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 150 python3 -m pytest -q -x -m gpu tests/test_hstu_triton.py -p no:cacheprovider \
    -k "persistent_dq or (test_gpu_gluon and dq-) or nonfinite_sequence_isolated" 2>&1 | tail -3
echo "tests $((SECONDS - T0)) s"
PYTHONPATH=src timeout 240 python3 benchmarks/src_variant_ab.py --family hstu --variants benchmarks/rounds/s40_dq_persist_variants.py \
    --rows B256-N1024,B128-N2048,ctx6-w256 --repeats 3 --profile --out $OUT/ab 2>&1 | grep -v Warn | grep -E "row|dq_persist|default" | cut -c1-260
echo "elapsed $((SECONDS - T0)) s"
