# Session 23 round 3 (issue #6): the fused-output state pass with the output's v_new-free terms ahead of the v_new
# chain (chunk_fwd.FUSE_O_EARLY) against after it, same process (gd_switch_ab); H16-ragged is the row where the fused
# pass lost (round 2: forward 1.002 -> 1.056 ms, its longest chain 116 chunks).
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s23_round3.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
mkdir -p $OUT/early
PYTHONPATH=src timeout 200 python3 benchmarks/gd_switch_ab.py --repeats 3 --out $OUT/early \
    --rows H16-8seqs,H16-ragged --switch "jagattn.gated_delta.triton.chunk_fwd:FUSE_O_EARLY=False,True" \
    2>&1 | grep -v Warn | tee $OUT/early.log | grep -v "^      "
echo "elapsed $((SECONDS - T0)) s"
