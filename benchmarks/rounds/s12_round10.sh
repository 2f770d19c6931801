# Session 12, round 10 (kind nvidia-h200, timeout_s 595, carry peers/gr): (1) HSTU scores with the constant
# factors applied once to the accumulators (JAGATTN_HSTU_SCALE_LAST, bf16 default) against the per-score
# factors (probe candidate "scaled"), five rows; (2) HSTU gpu tests; (3) the hstu suite with GR (as round 4).
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s12_round10.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 110 python3 benchmarks/hstu_probe.py --out $OUT/probe --deadline 95 --no-gr \
  --candidates scaled,phases > $OUT/probe_stdout.log 2>&1; echo "probe rc $? t=$((SECONDS-T0))"
grep -E "default fwd|candidates" $OUT/probe/hstu_probe.log | cut -c1-300
PYTHONPATH=src timeout -s INT 130 python3 -m pytest -q -m gpu tests/test_hstu_triton.py -n 4 -p no:cacheprovider -rfE \
  2>&1 | tee $OUT/hstu_gpu_tests.log | tail -3; echo "tests t=$((SECONDS-T0))"
mkdir -p $OUT/grprobe
OUT=$OUT/grprobe PYTHONPATH=src:peers/gr timeout 170 python3 benchmarks/hstu_gr_probe.py --jobs 16 --child-timeout 75 --skip-default \
  > $OUT/grprobe/log.txt 2>&1; echo "gr precompile rc $? t=$((SECONDS-T0))"
OUT=$OUT/bench timeout $((585 - (SECONDS-T0))) bash benchmarks/run_device.sh --family hstu --suite default --isolate \
  --warmup-ms 5 --rep-ms 25 --time-budget $((560 - (SECONDS-T0))) | grep -E "^  (triton|gr_triton)|^[A-Zr][A-Za-z0-9-]+:" | cut -c1-200
echo "done t=$((SECONDS-T0))"
