# Session 14, round 8 (kind nvidia-h200): attention backward variants (benchmarks/rounds/s14_variants_bwd.py:
# TMA q/do loads in dK/dV, TMA k/v loads in dQ, a 128x128 dQ tile), same process, alternated timings; then the
# per-layer host costs (benchmarks/op_overhead.py) with the eager fast path's old-style autograd Function.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s14_round8.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 330 python3 benchmarks/src_variant_ab.py --family attention --variants benchmarks/rounds/s14_variants_bwd.py \
    --repeats 2 --out $OUT --rows causal-mean8192-hkv16,causal-mean8192-hkv4,skewed,noncausal-mean2048,causal-mean2048-hkv16 \
    2>&1 | grep -v Warn | grep -E "^row|: fwd|ERROR|bitwise|\{" | cut -c1-250
PYTHONPATH=src timeout 150 python3 benchmarks/op_overhead.py --json $OUT/op_overhead.json 2>&1 | grep -v Warn > $OUT/op_overhead.log
grep "autograd=True  fast=True" $OUT/op_overhead.log
echo "elapsed $((SECONDS - T0)) s"
