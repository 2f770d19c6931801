# Session 16, round 3 (kind nvidia-h200): attention dK/dV with the dP^T product issued right after S^T
# (benchmarks/rounds/s16_variants_bwd.py: dp_early, dp_early_late; both again), same process, alternated timings.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s16_round3.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 400 python3 benchmarks/src_variant_ab.py --family attention --variants benchmarks/rounds/s16_variants_bwd.py \
    --only dp_early,dp_early_late,both --repeats 3 --out $OUT \
    --rows causal-mean8192-hkv16,causal-mean8192-hkv4,skewed,noncausal-mean2048,causal-mean2048-hkv4,causal-mean512-hkv16,window1024-mean8192 \
    2>&1 | grep -v Warn | grep -E "^row|: fwd|ERROR|rror|\{" | cut -c1-250 | tee $OUT/attention.log
echo "elapsed $((SECONDS - T0)) s"
