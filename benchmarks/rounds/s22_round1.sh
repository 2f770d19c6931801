# Session 22 round 1: 1. HSTU (issue #5) the opt-in atomic dQ path against the default dQ kernel on the three
# rows under 1.5x backward, same process, per-kernel times; 2. attention (issue #4) per-kernel times of the
# backward and the dQ tile list's other tiles first, on the rows under 1.2x backward.
# Call (kind nvidia-h100-x1): JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s22_round1.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 200 python3 benchmarks/src_variant_ab.py --family hstu --profile \
    --variants benchmarks/rounds/s22_variants.py --only atomic_dq --out $OUT --repeats 3 \
    --rows B256-N1024,ctx6-w256,B128-N2048 \
    2>&1 | grep -v "^\[\|Warn\|warn" | tee $OUT/ab_hstu.log | cut -c1-400
echo "hstu done $((SECONDS - T0)) s"
PYTHONPATH=src timeout $((570 - SECONDS + T0)) python3 benchmarks/src_variant_ab.py --family attention --profile \
    --variants benchmarks/rounds/s22_variants.py --only dq_128x64s4,dq_128x32r128,dq_64x64s2 --out $OUT --repeats 3 \
    --rows causal-mean8192-hkv4,skewed,noncausal-mean2048,causal-mean8192-hkv16 \
    2>&1 | grep -v "^\[\|Warn\|warn" | tee $OUT/ab_attn.log | cut -c1-400
echo "elapsed $((SECONDS - T0)) s"
