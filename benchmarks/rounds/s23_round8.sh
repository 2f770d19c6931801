# Session 23 round 8 (issue #6): the gated_delta suite against FLA 0.6.0 (same run; FLA's backward with its version gate
# bypassed, unverified) on the four rows FUSE_O changes (H16-1seq runs V blocks of 16: unfused, as in session 22).
# Call (carry .whl): JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s23_round8.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
timeout 470 bash benchmarks/run_device.sh --family gated_delta --suite H16-8seqs,H16-ragged,H16-64seqs,H32-8seqs \
    --backends triton,fla 2>&1 | grep -v "Warn\|warn\|^\[" | tail -40 | cut -c1-220
echo "elapsed $((SECONDS - T0)) s"
