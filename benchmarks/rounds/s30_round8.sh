# Session 30 round 8 (issues #4, #5): after the review refactor (the TMA ring's expect + two loads in
# _core.gluon.tma_load_pair, the slot search / grouped order as Gluon helpers, the HSTU Gluon tests merged): (1) the
# Gluon and isolation gpu tests of attention and HSTU; (2) the attention A/B of round 2 on one row (Gluon dQ vs Triton).
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s30_round8.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 300 python3 -m pytest -q -m gpu -p no:cacheprovider --tb=short -rfE tests/test_attention_triton.py \
    tests/test_hstu_triton.py -k "gluon or nonfinite or compile" > $OUT/gpu_tests.log 2>&1
grep -E "passed|failed|^E  .*Error|^FAILED" $OUT/gpu_tests.log | cut -c1-220 | tail -15
echo "elapsed $((SECONDS - T0)) s"
PYTHONPATH=src timeout 150 python3 benchmarks/src_variant_ab.py --family attention --repeats 2 --out $OUT --profile \
    --variants benchmarks/rounds/s30_dq_variants.py --only triton_dq --rows causal-mean8192-hkv16,skewed 2>&1 \
    | grep -v Warn > $OUT/ab_attention.log
grep -hE "^row|: \{|x[01]\.[0-9]+\)|not applicable|rror" $OUT/ab_attention.log | cut -c1-190
echo "elapsed $((SECONDS - T0)) s"
