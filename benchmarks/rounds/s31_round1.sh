# Session 31 round 1 (issue #5): is the HSTU backward of the suite rows bound by the host? Session 30's profile summed
# B256's kernels to ~0.25-0.45 ms less than do_bench's fwdbwd. Timelines of do_bench-like repetitions back to back
# (--no-sleep: idle gaps the host causes show) and with a 2 ms GPU sleep first (only a sync's gaps show), default
# kernels and the opt-in Gluon dK/dV kernel, plus a cProfile of the host side on B256.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s31_round1.sh
export OUT=${OUT:-$PWD/.device-out}
source benchmarks/device_round_env.sh
mkdir -p $OUT/traces
{
for ROWS in B256-N1024,B128-N2048,ctx6-w256,recsys; do
  echo "== default, no sleep"
  PYTHONPATH=src timeout 150 python3 benchmarks/bwd_timeline.py --family hstu --no-sleep --reps 8 \
      --trace-dir $OUT/traces --rows $ROWS 2>&1 | grep -v Warn
done
echo "== default, sleep, B256 + cProfile"
PYTHONPATH=src timeout 150 python3 benchmarks/bwd_timeline.py --family hstu --reps 3 --cprofile -n 30 \
    --trace-dir $OUT/traces --rows B256-N1024 2>&1 | grep -v Warn
echo "== JAGATTN_HSTU_GLUON=1, no sleep"
JAGATTN_HSTU_GLUON=1 PYTHONPATH=src timeout 150 python3 benchmarks/bwd_timeline.py --family hstu --no-sleep \
    --reps 8 --trace-dir $OUT/traces --rows B256-N1024,recsys 2>&1 | grep -v Warn
echo "elapsed $((SECONDS - T0)) s"
} > $OUT/log.txt 2>&1
cd $OUT && tar czf traces.tgz traces && rm -rf traces
grep -E "^row|rep |host|elapsed|==|Error" $OUT/log.txt | head -120
