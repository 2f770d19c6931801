# Session 17, round 7 (kind nvidia-h100-x1): attention dK/dV with the dP^T product issued before the dV one
# (benchmarks/rounds/s17_variants_dkdv.py), same process, alternated timings, bitwise check against the default.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s17_round7.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 330 python3 benchmarks/src_variant_ab.py --family attention --variants benchmarks/rounds/s17_variants_dkdv.py \
    --repeats 3 --out $OUT \
    --rows causal-mean8192-hkv16,causal-mean8192-hkv4,skewed,noncausal-mean2048,causal-mean2048-hkv4,causal-mean512-hkv16,window1024-mean8192 \
    2>&1 | grep -v Warn | grep -E "^row|: fwd|ERROR|rror|\{" | cut -c1-250 | tee $OUT/attention.log
echo "elapsed $((SECONDS - T0)) s"
