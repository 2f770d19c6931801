# Session 40 round 5 (issue #5): Nsight Compute on the dK/dV kernel of one B256 forward + backward, per-item
# (JAGATTN_HSTU_GLUON_PERSIST=0) against the persistent schedule (=1): occupancy, warp states, throughput.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s40_round5.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
for p in 0 1; do
  JAGATTN_HSTU_GLUON_PERSIST=$p PYTHONPATH=src timeout 200 ncu --profile-from-start off --clock-control none -k regex:dkdv \
    --section SpeedOfLight --section Occupancy --section WarpStateStats --section LaunchStats --section MemoryWorkloadAnalysis \
    -o $OUT/p$p python3 benchmarks/ncu_probe.py --family hstu --rows B256-N1024 --impls triton > $OUT/ncu_p$p.log 2>&1
  tail -3 $OUT/ncu_p$p.log
  ncu --import $OUT/p$p.ncu-rep --page details --csv > $OUT/p$p.csv 2>/dev/null
  echo "== persist=$p"
  python3 - "$OUT/p$p.csv" <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
hdr = rows[0]
iname, imetric, ival, iunit = hdr.index("Kernel Name"), hdr.index("Metric Name"), hdr.index("Metric Value"), hdr.index("Metric Unit")
for r in rows[1:]:
    m = r[imetric]
    if any(s in m for s in ("Duration", "Achieved Occupancy", "Registers", "Stall", "Warp Cycles Per Issued", "Issued Warp", "No Eligible",
                              "Memory Throughput", "DRAM Throughput", "L2 Hit", "L1/TEX Hit", "Compute (SM) Throughput", "Block Limit", "Theoretical Occ", "Eligible Warps", "Active Warps")):
        print(f"  {m[:60]:60s} {r[ival]:>12s} {r[iunit]}")
PY
done
echo "elapsed $((SECONDS - T0)) s"
