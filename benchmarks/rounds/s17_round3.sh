# Session 17, round 3 (kind nvidia-h100-x1, Firecracker: ncu reads counters there): Nsight Compute over one
# forward + backward of ours and FlexAttention on the mean-8192 Hkv 16 attention row, and ours on two HSTU rows
# (benchmarks/ncu_probe.py). Details pages as CSV and text under $OUT.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s17_round3.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
which ncu; ncu --version | tail -1
SECTIONS="--section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats --section ComputeWorkloadAnalysis --section SchedulerStats --section MemoryWorkloadAnalysis"
PYTHONPATH=src timeout 300 ncu --profile-from-start off --clock-control none $SECTIONS -f -o $OUT/attn \
    python3 benchmarks/ncu_probe.py --family attention --rows causal-mean8192-hkv16 --impls triton,flex 2>&1 | grep -v Warn | tail -30
ncu --import $OUT/attn.ncu-rep --page details --csv > $OUT/attn.csv 2>&1
ncu --import $OUT/attn.ncu-rep --page details > $OUT/attn.txt 2>&1
echo "attention done $((SECONDS - T0)) s"
PYTHONPATH=src timeout 200 ncu --profile-from-start off --clock-control none $SECTIONS -f -o $OUT/hstu \
    python3 benchmarks/ncu_probe.py --family hstu --rows B256-N1024,B64-N4096 --impls triton 2>&1 | grep -v Warn | tail -30
ncu --import $OUT/hstu.ncu-rep --page details --csv > $OUT/hstu.csv 2>&1
ncu --import $OUT/hstu.ncu-rep --page details > $OUT/hstu.txt 2>&1
ls -la $OUT
echo "elapsed $((SECONDS - T0)) s"
