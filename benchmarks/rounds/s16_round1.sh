# Session 16, round 1 (kind nvidia-h200): backward inner-loop orderings (benchmarks/rounds/s16_variants_bwd.py),
# same process, alternated timings: attention dK/dV (delta_late, qT, both) and HSTU dK/dV (dv_first).
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s16_round1.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 330 python3 benchmarks/src_variant_ab.py --family attention --variants benchmarks/rounds/s16_variants_bwd.py \
    --only delta_late,qT,both --repeats 2 --out $OUT \
    --rows causal-mean8192-hkv16,causal-mean8192-hkv4,skewed,noncausal-mean2048,causal-mean512-hkv16 \
    2>&1 | grep -v Warn | grep -E "^row|: fwd|ERROR|rror|bitwise|\{" | cut -c1-250 | tee $OUT/attention.log
echo "elapsed $((SECONDS - T0)) s"
PYTHONPATH=src timeout 200 python3 benchmarks/src_variant_ab.py --family hstu --variants benchmarks/rounds/s16_variants_bwd.py \
    --only dv_first --repeats 2 --out $OUT 2>&1 | grep -v Warn | grep -E "^row|: fwd|ERROR|rror|bitwise|\{" | cut -c1-250 | tee $OUT/hstu.log
echo "elapsed $((SECONDS - T0)) s"
