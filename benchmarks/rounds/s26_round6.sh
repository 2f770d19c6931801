# Session 26 round 6 (issue #4): the Gluon dK/dV kernel alone again (the round-5 Gluon dQ kernel removed). (1) gpu
# tests through it (every output must equal the Triton kernel's bit for bit; torch.compile vs eager); (2) same-process
# A/B of early_delta (delta loaded with lse2 at the top of the step) and triton_all on six rows.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s26_round6.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 280 python3 -m pytest -q -m gpu tests/test_attention_triton.py -p no:cacheprovider \
    -k "gluon or deterministic or compile or opcheck or production_sizes or dkdv_tma or cross_lengths" \
    > $OUT/gpu_tests.log 2>&1
grep -E "passed|failed|^E  |^FAILED" $OUT/gpu_tests.log | tail -15
echo "elapsed $((SECONDS - T0)) s"
PYTHONPATH=src timeout 250 python3 benchmarks/src_variant_ab.py --family attention --repeats 3 --out $OUT \
    --variants benchmarks/rounds/s26_variants.py --only early_delta,triton_all \
    --rows causal-mean8192-hkv16,causal-mean8192-hkv4,skewed,noncausal-mean2048,causal-mean512-hkv16,window1024-mean8192 \
    2>&1 | grep -v Warn > $OUT/ab.log
grep -E "^row|: \{|default:|early_delta:|triton_all:" $OUT/ab.log | cut -c1-120
echo "elapsed $((SECONDS - T0)) s"
