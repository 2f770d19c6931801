# Session 19 round 8 (issue #6): the three gated_delta suite rows that round 6's call limit cut (H16-64seqs,
# H16-1seq, H16-ragged) against FLA 0.6.0, same run (FLA's backward unverified, its version gate bypassed).
# Call (kind nvidia-h100-x1, carry .whl): JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s19_round8.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
timeout 570 bash benchmarks/run_device.sh --family gated_delta --suite H16-64seqs,H16-1seq,H16-ragged \
    --backends triton,fla 2>&1 | grep -v "Warn\|warn\|^\[" | tail -40 | cut -c1-220
echo "elapsed $((SECONDS - T0)) s"
