# Session 40 round 4 (issue #5): benchmarks/rounds/s40_persist_probe.py (why the persistent dK/dV schedule is slower).
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s40_round4.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 200 python3 benchmarks/rounds/s40_persist_probe.py 2>&1 | grep -v Warn | tee $OUT/probe.log | tail -20
echo "elapsed $((SECONDS - T0)) s"
