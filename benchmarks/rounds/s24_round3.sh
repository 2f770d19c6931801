# Session 24 round 3 (issue #4): the atomic dQ path with bulk TMA reductions (bwd.dq_reduce_tma): its gpu tests,
# then benchmarks/rounds/s24_variants.py against the default (separate dQ kernel), same process, on the rows under
# 1.2x and two shorter ones; per-kernel profile.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s24_round3.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 150 python3 -m pytest -q -m gpu -x -k "dq_modes" tests/test_attention_triton.py 2>&1 | tail -4
echo "tests done $((SECONDS - T0)) s"
PYTHONPATH=src timeout $((590 - SECONDS + T0)) python3 benchmarks/src_variant_ab.py --family attention \
    --variants benchmarks/rounds/s24_variants.py --out $OUT --repeats 3 --profile \
    --rows causal-mean8192-hkv16,causal-mean8192-hkv4,skewed,noncausal-mean2048,causal-mean2048-hkv4 \
    2>&1 | grep -v "^\[\|Warn\|warn" | tee $OUT/ab.log | grep -v "^      " | cut -c1-190
echo "elapsed $((SECONDS - T0)) s"
