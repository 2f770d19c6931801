# Session 12, round 4 (kind nvidia-h200, timeout_s 590, carry peers/gr), as s11_round6.sh: GR's autotune configs
# compiled first in parallel children (hstu_gr_probe.py --skip-default fills Triton's cache), then the
# full default hstu suite with GR in the same run. Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s12_round4.sh
export JAGATTN_AUTOTUNE=0 OUT=${OUT:-$PWD/.device-out}
mkdir -p $OUT/probe
echo "sha $JAGATTN_GIT_SHA"
T0=$SECONDS
OUT=$OUT/probe PYTHONPATH=src:peers/gr timeout 200 python3 benchmarks/hstu_gr_probe.py --jobs 16 --child-timeout 75 --skip-default \
  > $OUT/probe/log.txt 2>&1; echo "probe rc $? t=$((SECONDS-T0))"; tail -3 $OUT/probe/log.txt
timeout $((575 - (SECONDS-T0))) bash benchmarks/run_device.sh --family hstu --suite default --isolate \
  --warmup-ms 5 --rep-ms 25 --time-budget $((540 - (SECONDS-T0)))
