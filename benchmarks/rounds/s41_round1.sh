# Session 41 round 1 (issue #5): the HSTU Gluon kernels with host_desc_to_end descriptors (bwd_gluon.TO_END): their
# gpu tests (SPEC rule, bitwise against the 2-D boxes, isolation), then the same-process A/B against the 2-D boxes on
# B256 / B128 / B64 / ctx6 / recsys with per-kernel times.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s41_round1.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 240 python3 -m pytest -q -m gpu tests/test_hstu_triton.py -p no:cacheprovider \
    -k "test_gpu_gluon or nonfinite_sequence_isolated" 2>&1 | tail -15
echo "tests $((SECONDS - T0)) s"
PYTHONPATH=src timeout 300 python3 benchmarks/src_variant_ab.py --family hstu --variants benchmarks/rounds/s41_to_end_variants.py \
    --rows B256-N1024,B128-N2048,ctx6-w256,B64-N4096,recsys --repeats 3 --profile --out $OUT/ab 2>&1 | grep -v Warn | grep -E "row|zeroed|default|kernel|gluon" | cut -c1-300
echo "elapsed $((SECONDS - T0)) s"
