# Session 19 round 11 (issue #4): session 14's attention forward / dQ source variants (TMA K/V loads, warp
# specialization; benchmarks/rounds/s19_round11_variants.py) with the fixed src_variant_ab.py, which now reaches
# autotuner-wrapped kernels; four attention rows, three alternated passes, outputs compared to the default.
# Call (kind nvidia-h100-x1): JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s19_round11.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout -s INT 420 python3 benchmarks/src_variant_ab.py --family attention \
    --variants benchmarks/rounds/s19_round11_variants.py --out $OUT --repeats 3 \
    --rows causal-mean8192-hkv4,skewed,causal-mean8192-hkv16,noncausal-mean2048 \
    2>&1 | grep -v "^\[\|Warn\|warn" | tee $OUT/ab.log | cut -c1-140
echo "elapsed $((SECONDS - T0)) s"
