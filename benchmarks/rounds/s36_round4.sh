# Session 36 round 4 (issue #6): dqkwg and wy in one launch (chunk_bwd.FUSE_DQKWG_WY, one program per chunk and value
# head: the key blocks in a loop, a barrier, the WY backward reading dW / dK / the gate partials back from L2) against
# the two launches, same process (benchmarks/gd_switch_ab.py with the per-kernel profile), 2 passes.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s36_round4.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 400 python3 benchmarks/gd_switch_ab.py --out $OUT --rows H16-8seqs,H16-ragged,H16-1seq --repeats 2 \
    --switch "jagattn.gated_delta.triton.chunk_bwd:FUSE_DQKWG_WY=off,on" \
    2>&1 | grep -v Warn | tee $OUT/ab.log | grep -E "FUSE|fwd |dqkwg|wy" | cut -c1-300
echo "elapsed $((SECONDS - T0)) s"
