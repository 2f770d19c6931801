# Session 17, round 6 (kind nvidia-h100-x1): attention gpu tests on the row-padded lse2/delta backward, then Nsight
# Compute (stall sampling per instruction) of the new dK/dV kernel and the dQ kernel on the mean-8192 Hkv 16 row.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s17_round6.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 300 python3 -m pytest -m gpu -q -p no:cacheprovider -rfEs tests/test_attention_triton.py \
    2>&1 | grep -v Warn | tail -15 | tee $OUT/attention_gpu_tests.log
echo "tests done $((SECONDS - T0)) s"
SECTIONS="--section WarpStateStats --section InstructionStats --section SourceCounters --section ComputeWorkloadAnalysis --section SpeedOfLight --section LaunchStats"
PYTHONPATH=src timeout 200 ncu --profile-from-start off --clock-control none $SECTIONS \
    --kernel-name regex:"dkdv_kernel|bwd_dq_kernel" -f -o $OUT/bwd \
    python3 benchmarks/ncu_probe.py --family attention --rows causal-mean8192-hkv16 --impls triton 2>&1 | grep -v Warn | tail -6
ncu --import $OUT/bwd.ncu-rep --page details --print-details all > $OUT/bwd_details.txt 2>&1
ncu --import $OUT/bwd.ncu-rep --page source --print-source sass --csv > $OUT/bwd_source_sass.csv 2>&1
gzip $OUT/bwd_source_sass.csv; rm -f $OUT/bwd.ncu-rep
echo "elapsed $((SECONDS - T0)) s"
