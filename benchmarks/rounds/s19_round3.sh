# Session 19 round 3 (issue #5): same-process A/B of the session's HSTU kernel changes, per kernel
# (benchmarks/rounds/s19_round2_variants.py: prescale per kernel, the old address arithmetic per tile, an
# unsigned row mask), on four hstu suite rows, five alternated passes; outputs compared bitwise to the default.
# Call (kind nvidia-h100-x1): JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s19_round3.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout -s INT 570 python3 benchmarks/src_variant_ab.py --family hstu \
    --variants benchmarks/rounds/s19_round2_variants.py --out $OUT --rows B256-N1024,ctx6-w256,B64-N4096,B128-N2048 \
    --repeats ${REPEATS:-5} --only ${ONLY:-pre0,pre_dq,pre_dkdv,oldaddr_fwd,oldaddr_bwd,umask_fwd,umask_bwd} 2>&1 | grep -v "^\[\|Warn\|warn" | tee $OUT/ab.log | cut -c1-160
echo "elapsed $((SECONDS - T0)) s"
