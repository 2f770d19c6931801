# Session 23 round 6 (issue #6): round 5's two-loop FUSE_O with nothing tile-sized live across the loop choice (the
# chain's setup inside _h_chain; local compile 320 -> 296 B of spill, the fused loop alone 248), against off, same
# process (gd_switch_ab).
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s23_round6.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
mkdir -p $OUT/fuseo
PYTHONPATH=src timeout 200 python3 benchmarks/gd_switch_ab.py --repeats 3 --out $OUT/fuseo \
    --rows H16-ragged,H16-8seqs,H16-64seqs,H32-8seqs --switch "jagattn.gated_delta.triton.chunk_fwd:FUSE_O=off,auto" \
    2>&1 | grep -v Warn | tee $OUT/fuseo.log | grep -v "^      "
echo "elapsed $((SECONDS - T0)) s"
