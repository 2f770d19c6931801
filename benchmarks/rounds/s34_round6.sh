# Session 34 round 6 (issue #6): session 33 round 10 again with the chunk table in wy: Nsight Compute on wy and dqkwg
# (wy, dqkwg) in one forward + backward of H16-8seqs (benchmarks/ncu_probe.py, ours only: FLA's autotuning does not
# fit the call): speed of light, occupancy, memory, warp stall reasons, and wy's per-SASS-line stall samples.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s34_round6.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 300 ncu --profile-from-start off --clock-control none -k "regex:bwd_wy|bwd_dqkwg" \
    --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats --section SchedulerStats \
    --section MemoryWorkloadAnalysis --section SourceCounters -o $OUT/gd python3 benchmarks/ncu_probe.py \
    --family gated_delta --rows H16-8seqs --impls triton 2>&1 | grep -v "Warn\|warn" | tail -8
echo "profiled $((SECONDS - T0)) s"
ncu --import $OUT/gd.ncu-rep --page details --csv > $OUT/gd_details.csv 2>&1
ncu --import $OUT/gd.ncu-rep --page source --csv -k regex:_gated_delta_bwd_wy --print-source sass > $OUT/gd_wy_sass.csv 2>&1 || true
gzip -f $OUT/gd.ncu-rep $OUT/gd_wy_sass.csv; ls -la $OUT
grep -E "bwd_wy|bwd_dqkwg" $OUT/gd_details.csv | grep -E "Duration|Registers Per|Achieved Occupancy|Memory Throughput|Compute \(SM\)|Stall|Issued Warp|No Eligible|Eligible Warps|DRAM Throughput|Shared Memory Configuration Size|Dynamic Shared" | cut -c1-220 | head -60
echo "elapsed $((SECONDS - T0)) s"
