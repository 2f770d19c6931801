# Session 36 round 5 (issue #6): the gated_delta suite against FLA 0.6.0 (same run; FLA's backward with its version gate
# bypassed, unverified) on all five rows: the first suite since session 32, with sessions 34-35's wy chunk table and
# merged loops and the dqkwg config.
# Call (carry .whl): JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s36_round5.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
timeout 560 bash benchmarks/run_device.sh --family gated_delta \
    --suite H16-8seqs,H16-ragged,H16-1seq,H16-64seqs,H32-8seqs --backends triton,fla \
    2>&1 | grep -v "Warn\|warn\|^\[" | grep -E "^H|^  triton|^  fla|geometric|^  [a-z]" | cut -c1-220
echo "elapsed $((SECONDS - T0)) s"
