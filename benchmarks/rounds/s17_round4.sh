# Session 17, round 4 (kind nvidia-h100-x1, Firecracker): where the attention dK/dV kernel loses to FlexAttention's
# backward (round 3: ours dK/dV 4.76 ms + dQ 2.51 ms vs Flex 6.34 ms in one kernel, mean 8192 Hkv 16). Nsight Compute
# with per-instruction warp-stall sampling (SourceCounters) on our dK/dV kernel and Flex's backward kernel only:
# stall reasons, instruction mix, SASS with samples per instruction.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s17_round4.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
SECTIONS="--section WarpStateStats --section InstructionStats --section SourceCounters --section ComputeWorkloadAnalysis --section SpeedOfLight"
PYTHONPATH=src timeout 400 ncu --profile-from-start off --clock-control none $SECTIONS \
    --kernel-name regex:"dkdv_kernel|flex_attention_backward_1" -f -o $OUT/bwd \
    python3 benchmarks/ncu_probe.py --family attention --rows causal-mean8192-hkv16 --impls triton,flex 2>&1 | grep -v Warn | tail -12
ncu --import $OUT/bwd.ncu-rep --page details --print-details all > $OUT/bwd_details.txt 2>&1
ncu --import $OUT/bwd.ncu-rep --page source --print-source sass --csv > $OUT/bwd_source_sass.csv 2>&1
ncu --import $OUT/bwd.ncu-rep --page raw --csv > $OUT/bwd_raw.csv 2>&1
gzip -k $OUT/bwd_source_sass.csv
ls -la $OUT
echo "elapsed $((SECONDS - T0)) s"
