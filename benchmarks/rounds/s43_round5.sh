# Session 43 round 5 (issue #5): the replay gpu tests (fixed test), then the hstu suite against GR with launch replay
# on (the default; carry peers).
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s43_round5.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 100 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_launch_replay.py 2>&1 | tail -4
echo "tests $((SECONDS - T0)) s"
export JAGATTN_GR_COMMIT=$(cat peers/gr/COMMIT 2>/dev/null)
mkdir -p $OUT/suite1
OUT=$OUT/suite1 timeout 230 bash benchmarks/run_device.sh --family hstu --backends triton,gr_triton > $OUT/suite1_stdout.txt 2>&1
grep -v "^\[" $OUT/suite1/log.txt | grep -E "^[A-Za-z0-9-]+:|^  (triton|gr)" | cut -c1-200
echo "elapsed $((SECONDS - T0)) s"
cd $OUT && tar czf suite.tgz suite1 suite1_stdout.txt && rm -rf suite1 suite1_stdout.txt
