# Session 40 round 1 (issue #6): (a) the backward's recompute in segments on the chain-bound rows (H16-ragged's
# longest sequence has 116 chunks, the GPU's balanced share is ~62: segments of 64 / 48 / 32 chunks against "auto",
# which segments only H16-1seq); (b) DH_SPLIT (dS as bf16 hi + lo) re-measured on today's kernels (session 13 had it
# slower). Same process, alternated (gd_switch_ab.py), with a per-kernel profile.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s40_round1.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
M=jagattn.gated_delta
PYTHONPATH=src timeout 330 python3 benchmarks/gd_switch_ab.py --out $OUT --rows H16-ragged,H16-8seqs --repeats 2 \
    --switch "$M.triton.chunk_fwd:SEG=auto,64,48,32" \
    2>&1 | grep -v Warn | tee $OUT/ab_seg.log | grep -E "^H|fwd |h_kernel|dhu|total" | cut -c1-300
mkdir -p $OUT/dh; PYTHONPATH=src timeout 200 python3 benchmarks/gd_switch_ab.py --out $OUT/dh --rows H16-8seqs,H16-ragged --repeats 2 \
    --switch "$M.triton.chunk_bwd:DH_SPLIT=off,auto" \
    2>&1 | grep -v Warn | tee $OUT/ab_dh.log | grep -E "^H|fwd |h_kernel|dhu|dqkwg" | cut -c1-300
echo "elapsed $((SECONDS - T0)) s"
