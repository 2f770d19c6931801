# Session 22 round 5 (issue #6): the gated_delta suite against FLA 0.6.0 (same run; FLA's backward with its version
# gate bypassed, unverified) with the fused forward state pass as the default (chunk_fwd.FUSE_WU="fwd"), the rows it
# changes and H16-1seq, after restoring dhu's unfused step (round 4's tree had it reordered: 0.468 -> 0.607 ms on H16-8seqs).
# Call (kind nvidia-h100-x1 or the held H200): JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s22_round5.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
timeout 570 bash benchmarks/run_device.sh --family gated_delta --suite H16-8seqs,H16-ragged,H16-1seq,H16-64seqs,H32-8seqs \
    --backends triton,fla 2>&1 | grep -v "Warn\|warn\|^\[" | tail -45 | cut -c1-220
echo "elapsed $((SECONDS - T0)) s"
