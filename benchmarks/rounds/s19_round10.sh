# Session 19 round 10 (issue #4): same-process A/B of the attention forward's lazy rescale
# (benchmarks/rounds/s19_round9_variants.py) on six attention suite rows, five alternated passes, outputs
# compared to the default. Round 9 ran the same with src_variant_ab.py missing autotuner-wrapped kernels (the variant never applied).
# Call (kind nvidia-h100-x1): JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s19_round10.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout -s INT 400 python3 benchmarks/src_variant_ab.py --family attention \
    --variants benchmarks/rounds/s19_round9_variants.py --out $OUT --repeats 5 \
    --rows causal-mean8192-hkv4,skewed,causal-mean8192-hkv16,causal-mean2048-hkv4,noncausal-mean2048,window1024-mean8192 \
    2>&1 | grep -v "^\[\|Warn\|warn" | tee $OUT/ab.log | cut -c1-130
echo "elapsed $((SECONDS - T0)) s"
