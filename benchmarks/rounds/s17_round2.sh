# Session 17, round 2 (kind nvidia-h200): attention backward launch orders (benchmarks/rounds/s17_variants_order.py:
# dK/dV head-major on every row, off everywhere, dQ heads fastest, both), same process, alternated timings.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s17_round2.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 560 python3 benchmarks/src_variant_ab.py --family attention --variants benchmarks/rounds/s17_variants_order.py \
    --repeats 2 --out $OUT \
    --rows causal-mean8192-hkv4,causal-mean8192-hkv16,skewed,noncausal-mean2048,causal-mean2048-hkv4,causal-mean2048-hkv16,causal-mean512-hkv4,window1024-mean8192 \
    2>&1 | grep -v Warn | grep -E "^row|: fwd|ERROR|rror|\{" | cut -c1-250 | tee $OUT/attention.log
echo "elapsed $((SECONDS - T0)) s"
