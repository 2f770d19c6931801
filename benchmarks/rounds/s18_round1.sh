# Session 18 round 1 (issue #5): HSTU dense-grid order A/B (JAGATTN_HSTU_L2_GROUP: old = B*H, 1, 8, 32) on the
# five hstu rows with GR in the same process, then Nsight Compute of the three B256-N1024 kernels with the
# new default (group 1): DRAM throughput and L2 hit rate against session 17's round 3 (86% / 9% forward).
# Call (kind nvidia-h100-x1, carry peers): JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s18_round1.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
export PYTHONPATH=src:peers/gr
timeout 330 python3 benchmarks/hstu_l2_group_ab.py --out $OUT --deadline 280 2>&1 | grep -v Warn | tail -60
echo "ab done $((SECONDS - T0)) s"
SECTIONS="--section SpeedOfLight --section MemoryWorkloadAnalysis --section LaunchStats --section Occupancy --section WarpStateStats"
timeout 150 ncu --profile-from-start off --clock-control none $SECTIONS --kernel-name regex:"hstu_(fwd|bwd)" \
    --launch-count 3 -f -o $OUT/hstu_b256 python3 benchmarks/ncu_probe.py --family hstu --rows B256-N1024 \
    --impls triton 2>&1 | grep -v Warn | tail -5
ncu --import $OUT/hstu_b256.ncu-rep --page details > $OUT/hstu_b256.txt 2>&1
rm -f $OUT/hstu_b256.ncu-rep
grep -E "^  _hstu|Duration|DRAM Throughput|L2 Hit Rate|Compute \(SM\) Throughput" $OUT/hstu_b256.txt
echo "elapsed $((SECONDS - T0)) s"
