# Session 35 round 3 (issue #6): round 2 with the inline-asm release and two measurement modes; the output programs inside the forward's state pass launch (chunk_fwd.OVERLAP_O),
# A/B in one process (benchmarks/rounds/s35_overlap_ab.py), then the 1seq suite row's forward/backward check.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s35_round2.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 420 python3 benchmarks/rounds/s35_overlap_ab.py --out $OUT --rows H16-1seq,H32-1seq --passes 2 2>&1 | grep -v Warn | tee $OUT/ab.log
echo "elapsed $((SECONDS - T0)) s"
