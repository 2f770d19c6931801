# Session 26 round 4 (issue #4): (1) the fixed strided/deterministic Gluon gpu test; (2) Gluon tile variants
# (BLOCK_M 32, more stages) against the default 64x64 s2 w4 on four rows; (3) the attention suite against torch
# varlen_attn and FlexAttention with the Gluon dK/dV kernel (the default).
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s26_round4.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 120 python3 -m pytest -q -m gpu tests/test_attention_triton.py -p no:cacheprovider \
    -k "gluon_strided" > $OUT/gpu_tests.log 2>&1
tail -3 $OUT/gpu_tests.log
echo "elapsed $((SECONDS - T0)) s"
PYTHONPATH=src timeout 200 python3 benchmarks/src_variant_ab.py --family attention --repeats 3 --out $OUT \
    --variants benchmarks/rounds/s26_variants.py --only g_m32s3,g_m32s4,g_m32n128s3w8 \
    --rows causal-mean8192-hkv16,causal-mean8192-hkv4,skewed,noncausal-mean2048 \
    2>&1 | grep -v Warn > $OUT/ab.log
grep -E "^row|: \{|default:|g_m32" $OUT/ab.log
echo "elapsed $((SECONDS - T0)) s"
mkdir -p $OUT/suite
OUT=$OUT/suite timeout 240 bash benchmarks/run_device.sh --family attention --backends triton,torch_varlen,flex \
    > /dev/null 2>&1
grep -v "^\[" $OUT/suite/log.txt | grep -E "^[a-z0-9-]+:|^  (triton|torch_varlen|flex)" | cut -c1-200
echo "elapsed $((SECONDS - T0)) s"
