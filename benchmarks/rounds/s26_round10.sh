# Session 26 round 10 (issue #4): the mean-8192 Hkv 16 row's backward sits at 1.197-1.199x Flex (rounds 8, 9): two more
# Gluon dK/dV variants, early_refill and head_major (MHA), same process, five rows.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s26_round10.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 300 python3 benchmarks/src_variant_ab.py --family attention --repeats 3 --profile --out $OUT \
    --variants benchmarks/rounds/s26_variants.py --only early_refill,head_major \
    --rows causal-mean8192-hkv16,causal-mean8192-hkv4,skewed,noncausal-mean2048,causal-mean2048-hkv16 \
    2>&1 | grep -v Warn > $OUT/ab.log
grep -E "^row|: \{|default:|early_refill:|head_major:" $OUT/ab.log | cut -c1-150
grep -E "kernels of" $OUT/ab.log | cut -c1-110
echo "elapsed $((SECONDS - T0)) s"
