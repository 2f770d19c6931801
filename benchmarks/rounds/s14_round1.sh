# Session 14, round 1 (kind nvidia-h200): Triton's automatic warp specialization on the main loop of the
# HSTU and attention kernels (benchmarks/rounds/s14_variants_ws.py), same process, alternated timings of the
# public forward and backward, diffs against the unpatched code (benchmarks/src_variant_ab.py).
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s14_round1.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
V=benchmarks/rounds/s14_variants_ws.py
PYTHONPATH=src timeout 270 python3 benchmarks/src_variant_ab.py --family hstu --variants $V \
    --only h_ws_fwd,h_ws_bwd --repeats 2 --out $OUT 2>&1 | grep -v Warn | tail -80
PYTHONPATH=src timeout 270 python3 benchmarks/src_variant_ab.py --family attention --variants $V \
    --only a_ws_fwd,a_ws_dq,a_ws_dkdv --repeats 2 --out $OUT \
    --rows causal-mean8192-hkv16,skewed,causal-mean2048-hkv16,causal-mean512-hkv4 2>&1 | grep -v Warn | tail -80
echo "elapsed $((SECONDS - T0)) s"
