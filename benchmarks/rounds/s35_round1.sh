# Session 35 round 1 (issue #6): the state pass at 128-row steps against 64 (benchmarks/rounds/s35_pair_probe.py)
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s35_round1.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 400 python3 benchmarks/rounds/s35_pair_probe.py --out $OUT 2>&1 | grep -v Warn | tee $OUT/probe.log
echo "elapsed $((SECONDS - T0)) s"
