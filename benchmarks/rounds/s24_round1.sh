# Session 24 round 1 (issue #6): session 23's unmeasured round 9 (the fused-output bound FUSE_O_MAX_MEAN on two ragged
# draws), then the gated_delta suite against FLA 0.6.0 on H16-ragged and H16-1seq at the default bound (1.0).
# Call (carry .whl): JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s24_round1.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
bash benchmarks/rounds/s23_round9.sh
source benchmarks/device_round_env.sh
timeout 380 bash benchmarks/run_device.sh --family gated_delta --suite H16-ragged,H16-1seq \
    --backends triton,fla 2>&1 | grep -v "Warn\|warn\|^\[" | tail -30 | cut -c1-220
echo "elapsed $((SECONDS - T0)) s"
