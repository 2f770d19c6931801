# Session 12, round 12 (kind nvidia-h200, timeout_s 300): after removing the per-phase HSTU loops (the one-loop
# code unchanged but for the constexpr flags), the HSTU gpu tests and the probe (default vs "scaled").
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s12_round12.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout -s INT 150 python3 -m pytest -q -m gpu tests/test_hstu_triton.py -n 4 -p no:cacheprovider -rfE \
  2>&1 | tee $OUT/hstu_gpu_tests.log | tail -2; echo "tests t=$((SECONDS-T0))"
PYTHONPATH=src timeout 110 python3 benchmarks/hstu_probe.py --out $OUT --deadline 95 --no-gr --candidates scaled \
  > $OUT/probe_stdout.log 2>&1; echo "probe rc $? t=$((SECONDS-T0))"
grep -E "default fwd|candidates" $OUT/hstu_probe.log | cut -c1-200
