# Session 14, round 4 (kind nvidia-h200): attention forward tiles 128x128 (2/3 stages) and 256x64 (2/3 stages)
# with pointer loads, TMA K/V loads with 128x128; HSTU forward/dQ with TMA K/V loads (allocator fixed) (benchmarks/rounds/s14_variants_tma.py), same
# process, alternated timings, diffs against the unpatched code (benchmarks/src_variant_ab.py).
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s14_round4.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
V=benchmarks/rounds/s14_variants_tma.py
PYTHONPATH=src timeout 280 python3 benchmarks/src_variant_ab.py --family attention --variants $V \
    --only a_ptr_128x128,a_desc_128x128,a_ptr_128x128s2,a_ptr_256x64,a_ptr_256x64s2 --repeats 2 --out $OUT \
    --rows causal-mean8192-hkv16,causal-mean8192-hkv4,skewed,noncausal-mean2048,causal-mean2048-hkv4 \
    2>&1 | grep -v Warn | tail -100
PYTHONPATH=src timeout 200 python3 benchmarks/src_variant_ab.py --family hstu --variants $V \
    --only h_desc --repeats 3 --out $OUT 2>&1 | grep -v Warn | tail -60
echo "elapsed $((SECONDS - T0)) s"
