# Session 26 round 3 (issue #4): the Gluon dK/dV kernel in the library. (1) attention gpu tests touching the
# backward (2 processes at most: the fp32 references of two production tests fill an H100 otherwise); (2) the
# same-process A/B Gluon (default) vs the Triton dK/dV kernel on the backward-target rows, per-kernel times.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s26_round3.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 330 python3 -m pytest -q -m gpu tests/test_attention_triton.py -p no:cacheprovider \
    -k "gluon or dkdv_tma or deterministic or compile or opcheck or production_sizes or dq_modes" \
    > $OUT/gpu_tests.log 2>&1
tail -25 $OUT/gpu_tests.log
echo "elapsed $((SECONDS - T0)) s"
PYTHONPATH=src timeout 200 python3 benchmarks/src_variant_ab.py --family attention --repeats 3 --profile --out $OUT \
    --variants benchmarks/rounds/s26_variants.py \
    --rows causal-mean8192-hkv16,causal-mean8192-hkv4,skewed,noncausal-mean2048,causal-mean512-hkv16,window1024-mean8192 \
    2>&1 | grep -v Warn > $OUT/ab.log
grep -E "^row|triton_dkdv: \{|default:|triton_dkdv:" $OUT/ab.log
grep -E "kernels of" $OUT/ab.log | cut -c1-260
echo "elapsed $((SECONDS - T0)) s"
