# Session 36 round 3 (issue #6): the gated delta path switches re-measured on today's kernels (each was decided
# sessions ago on older ones), same process, alternated (benchmarks/gd_switch_ab.py, no per-kernel profile),
# H16-8seqs and H16-1seq, 2 passes.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s36_round3.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
M=jagattn.gated_delta
PYTHONPATH=src timeout 560 python3 benchmarks/gd_switch_ab.py --out $OUT --rows H16-8seqs,H16-1seq --repeats 2 --no-profile \
    --switch "$M.triton.chunk_fwd:FUSE_WU=state,all" \
    --switch "$M.triton.chunk_bwd:FUSE_DV=auto,0,1" \
    --switch "$M.triton.chunk_bwd:CHUNK_TABLE=wy,wy_dqkwg" \
    --switch "$M.ops:FUSE_K_L2N=auto,off" \
    --switch "$M.triton.chunk_fwd:KKT_VARIANT=blocks16,dot64" \
    --switch "$M.triton.common:STATE_PREFETCH=auto,0,1" \
    2>&1 | grep -v Warn | tee $OUT/ab.log | cut -c1-300
echo "elapsed $((SECONDS - T0)) s"
