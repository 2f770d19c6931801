# Session 25 round 11 (issue #6): the gated_delta suite against FLA 0.6.0 (same run; FLA's backward with its version gate
# bypassed, unverified) on all five rows with this session's code (dhu's int32 slot index).
# Call (carry .whl): JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s25_round11.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
timeout 540 bash benchmarks/run_device.sh --family gated_delta \
    --suite H16-8seqs,H16-ragged,H16-1seq,H16-64seqs,H32-8seqs --backends triton,fla \
    2>&1 | grep -v "Warn\|warn\|^\[" | grep -E "^H|^  triton|^  fla|geometric|^  [a-z]" | cut -c1-220
echo "elapsed $((SECONDS - T0)) s"
