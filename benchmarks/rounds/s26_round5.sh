# Session 26 round 5 (issue #4): the Gluon dQ kernel. (1) the Gluon gpu tests and the backward tests that run through
# it; (2) same-process A/B on six rows: default (Gluon dQ + dK/dV) vs triton_all (JAGATTN_ATTN_GLUON=0), triton_dq
# (Triton dQ + Gluon dK/dV) and three dQ settings.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s26_round5.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 270 python3 -m pytest -q -m gpu tests/test_attention_triton.py -p no:cacheprovider \
    -k "gluon or deterministic or compile or opcheck or production_sizes or dq_modes or cross_lengths" \
    > $OUT/gpu_tests.log 2>&1
grep -E "passed|failed|Error|error" $OUT/gpu_tests.log | tail -15
echo "elapsed $((SECONDS - T0)) s"
PYTHONPATH=src timeout 290 python3 benchmarks/src_variant_ab.py --family attention --repeats 2 --profile --out $OUT \
    --variants benchmarks/rounds/s26_variants.py --only triton_all,triton_dq,dq_defer,dq_s2,dq_n128s2 \
    --rows causal-mean8192-hkv16,causal-mean8192-hkv4,skewed,noncausal-mean2048,causal-mean512-hkv16 \
    2>&1 | grep -v Warn > $OUT/ab.log
grep -E "^row|: \{|default:|triton_all:|triton_dq:|dq_defer:|dq_s2:|dq_n128s2:" $OUT/ab.log
grep -E "(default|triton_all) kernels of" $OUT/ab.log | cut -c1-200
echo "elapsed $((SECONDS - T0)) s"
