# Session 14, round 16 (kind nvidia-h200): HSTU packed bf16x2 scores only for batches with many keys per row
# (fwd.packed_for_shape): the hstu gpu tests, round 13's failing hstu seeds with their scale, and a bf16/fp16
# hstu fuzz over new seeds at three scales.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s14_round16.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
job() { eval "$1" 2>&1 | grep -E "^FAIL|^fuzz|Error" | sed "s|^|[$1] |" | cut -c1-420; }
export -f job
F="PYTHONPATH=src timeout 230 python3 benchmarks/fuzz_spec_rule.py --device cuda"
{
  for s in 3006 3023 3033; do echo "$F --op hstu --seed $s --scale 8"; done
  echo "$F --op hstu --first-seed 3000 --cases 40 --scale 8 --time-budget 180"
  echo "$F --op hstu --first-seed 4000 --cases 60 --scale 1 --time-budget 180"
  echo "$F --op hstu --first-seed 4100 --cases 60 --scale 1 --time-budget 180"
  echo "$F --op hstu --first-seed 4200 --cases 40 --scale 8 --time-budget 180"
  echo "$F --op hstu --first-seed 4300 --cases 30 --scale 32 --time-budget 180"
} | xargs -P 10 -d '\n' -n 1 bash -c 'job "$1"' _ 2>&1 | tee $OUT/fuzz_hstu.log
PYTHONPATH=src timeout -s INT 200 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_hstu_triton.py 2>&1 | tail -3 | tee $OUT/gpu_tests_hstu.log
echo "elapsed $((SECONDS - T0)) s"
