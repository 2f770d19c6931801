# Session 30 round 1 (issue #4): the Gluon dQ kernel at several tiles and the Triton dQ kernel's 64x64 / 4-warp tile
# against the default (Triton dQ 128x64 / 8 warps / 3 stages), same process (benchmarks/rounds/s30_dq_variants.py).
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s30_round1.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 540 python3 benchmarks/src_variant_ab.py --family attention --repeats 2 --out $OUT --profile \
    --variants benchmarks/rounds/s30_dq_variants.py \
    --rows causal-mean8192-hkv16,causal-mean8192-hkv4,skewed,causal-mean512-hkv16,noncausal-mean2048 2>&1 \
    | grep -v Warn > $OUT/ab_attention.log
grep -hE "^row|: \{|x[01]\.[0-9]+\)|not applicable|rror" $OUT/ab_attention.log | cut -c1-190
echo "elapsed $((SECONDS - T0)) s"
