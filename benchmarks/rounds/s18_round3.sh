# Session 18 round 3 (issue #5), the grid order landed (L2_GROUP rule):
#  1. the HSTU gpu tests (JAGATTN_AUTOTUNE=0), including the new grid-order tests;
#  2. Nsight Compute with per-instruction stall sampling of the three B256-N1024 kernels (forward, dQ, dK/dV):
#     where the compute-bound kernels now spend their cycles.
# Call (kind nvidia-h100-x1): JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s18_round3.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout -s INT 240 python3 -m pytest -q -m gpu tests/test_hstu_triton.py -p no:cacheprovider -rfE \
    2>&1 | tail -8
echo "tests done $((SECONDS - T0)) s"
SECTIONS="--section WarpStateStats --section InstructionStats --section SourceCounters --section ComputeWorkloadAnalysis --section SpeedOfLight --section LaunchStats --section Occupancy"
PYTHONPATH=src timeout 200 ncu --profile-from-start off --clock-control none $SECTIONS --kernel-name regex:"hstu_(fwd|bwd)" \
    --launch-count 3 -f -o $OUT/hstu3 python3 benchmarks/ncu_probe.py --family hstu --rows B256-N1024 --impls triton \
    2>&1 | grep -v Warn | tail -4
ncu --import $OUT/hstu3.ncu-rep --page details --print-details all > $OUT/hstu3_details.txt 2>&1
ncu --import $OUT/hstu3.ncu-rep --page source --print-source sass --csv > $OUT/hstu3_sass.csv 2>&1
gzip $OUT/hstu3_sass.csv; rm -f $OUT/hstu3.ncu-rep
grep -E "^  _hstu|Duration|Executed Ipc Active|Issue Slots Busy|Compute \(SM\) Throughput" $OUT/hstu3_details.txt
echo "elapsed $((SECONDS - T0)) s"
