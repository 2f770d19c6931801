# Session 14, round 3 (kind nvidia-h200): TMA descriptor loads of K/V in the attention forward and the HSTU
# forward/dQ kernel, and the 128x128 attention forward tile (benchmarks/rounds/s14_variants_tma.py), same
# process, alternated timings, diffs against the unpatched code (benchmarks/src_variant_ab.py).
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s14_round3.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
V=benchmarks/rounds/s14_variants_tma.py
PYTHONPATH=src timeout 280 python3 benchmarks/src_variant_ab.py --family attention --variants $V \
    --only a_desc,a_desc_128x128,a_ptr_128x128 --repeats 2 --out $OUT \
    --rows causal-mean8192-hkv16,causal-mean8192-hkv4,skewed,causal-mean2048-hkv16,noncausal-mean2048,causal-mean512-hkv4,window1024-mean8192 \
    2>&1 | grep -v Warn | tail -100
PYTHONPATH=src timeout 200 python3 benchmarks/src_variant_ab.py --family hstu --variants $V \
    --only h_desc --repeats 3 --out $OUT 2>&1 | grep -v Warn | tail -60
echo "elapsed $((SECONDS - T0)) s"
