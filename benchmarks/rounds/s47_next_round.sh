# Prepared in session 47, not yet run. Session 47's round 4 ran test_compile / test_autograd / test_dispatch /
# test_export / test_fp32_route on cuda together (-n 4) after the precision.exporting() fix and was cut at 500 s
# with ~73 passed and none failed, without a summary line; round 5 then ran test_compile.py alone (10 passed).
# This runs the other four modules on cuda (device fixture, not -m gpu), each with its own time limit, so the slow
# one shows itself, and prints each module's summary line.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s47_next_round.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
for m in test_autograd test_dispatch test_fp32_route test_export; do
  s=$SECONDS
  PYTHONPATH=src timeout 240 python3 -m pytest -q -p no:cacheprovider -n 3 tests/$m.py -rfE --durations=5 \
      > $OUT/$m.txt 2>&1
  echo "$m rc=$? $((SECONDS - s)) s: $(grep -E ' passed| failed| error' $OUT/$m.txt | tail -1)"
  grep -E "^FAILED|^ERROR" $OUT/$m.txt | head -5
done
echo "elapsed $((SECONDS - T0)) s"
