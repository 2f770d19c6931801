# Prepared in session 17, not run (no device time left) — for issue #5 (HSTU forward 1.06-1.15x GR, target 1.2).
# Session 17's Nsight Compute look (round 3) found the B256-N1024 forward the weakest kernel profiled: 0.995 ms on the
# first-listed 128x32 / 4-warp / 3-stage tile at 31% SM throughput, IPC 1.05 (wgmma N = 32). This round:
#  1. hstu_probe.py, forward candidates only, on B256-N1024 and B128-N2048 (is 128x32/4w still the best tile
#     since sessions 12-14 changed the kernel?);
#  2. Nsight Compute with per-instruction stall sampling of the forward (MODE 0) on B256-N1024.
# Call (kind nvidia-h100-x1, Firecracker for ncu): JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s17_prepared_hstu.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 260 python3 benchmarks/hstu_probe.py --out $OUT --deadline 220 --candidates fwd: \
    --rows B256-N1024,B128-N2048 --no-gr 2>&1 | grep -v Warn | tail -40
echo "probe done $((SECONDS - T0)) s"
SECTIONS="--section WarpStateStats --section InstructionStats --section SourceCounters --section ComputeWorkloadAnalysis --section SpeedOfLight --section LaunchStats --section Occupancy"
PYTHONPATH=src timeout 200 ncu --profile-from-start off --clock-control none $SECTIONS --kernel-name regex:"hstu_fwd" \
    --launch-count 1 -f -o $OUT/hstu_fwd python3 benchmarks/ncu_probe.py --family hstu --rows B256-N1024 --impls triton \
    --no-bwd 2>&1 | grep -v Warn | tail -5
ncu --import $OUT/hstu_fwd.ncu-rep --page details --print-details all > $OUT/hstu_fwd_details.txt 2>&1
ncu --import $OUT/hstu_fwd.ncu-rep --page source --print-source sass --csv > $OUT/hstu_fwd_sass.csv 2>&1
gzip $OUT/hstu_fwd_sass.csv; rm -f $OUT/hstu_fwd.ncu-rep
echo "elapsed $((SECONDS - T0)) s"
