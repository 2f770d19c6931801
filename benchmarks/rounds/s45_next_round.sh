# Prepared in session 45, not run (its device time was spent). What landed untested on a GPU in session 45:
# (1) the gated delta gate floor (common.GATE_FLOOR: one compare-and-select per gate load in the two prepare kernels
# and gk's cumsum) and dqkwg's gate sums without the cancelling pairs (two selects; local sm_90 compile: 255
# registers, no stack, as before): the gated delta gpu tests (43) and the new
# hard-reset / strong-gate tests on cuda (device fixture: not `-m gpu`), then
# H16-8seqs and H16-1seq triton-only (forward 0.758 / 1.333, backward 2.494 / 2.991 ms in session 36's suite: must not
# move); (2) the HSTU dQ autotuners' restore_value: the new gpu test under real autotuning, then the hstu gpu tests
# -k ctx with JAGATTN_AUTOTUNE=1 (the device rounds keep autotuning off, which hid the bug).
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s45_next_round.sh   (split in two calls on a fresh machine)
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PART=${PART:-all}
if [ "$PART" != hstu ]; then
  PYTHONPATH=src timeout 560 python3 benchmarks/gpu_tests_parallel.py --workers 5 --timeout 540 --out $OUT/gd_tests \
      tests/test_gated_delta_triton.py tests/test_gated_delta_gk.py 2>&1 | tail -7
  grep -h -E "^FAILED|^ERROR" $OUT/gd_tests/*.log 2>/dev/null | head -20
  PYTHONPATH=src timeout 300 python3 -m pytest -q -p no:cacheprovider tests/test_gated_delta_triton.py \
      tests/test_gated_delta_gk.py -k "hard_reset or strong_gates" --tb=short 2>&1 | tail -4
fi
if [ "$PART" != gd ]; then
  PYTHONPATH=src timeout 200 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_hstu_triton.py \
      -k "real_autotuning" --tb=short 2>&1 | tail -4
  PYTHONPATH=src timeout 200 python3 -m pytest -q -p no:cacheprovider tests/test_hstu_triton.py \
      -k "autotune_restores" --tb=short 2>&1 | tail -3
  JAGATTN_AUTOTUNE=1 PYTHONPATH=src timeout 300 python3 -m pytest -q -p no:cacheprovider -m gpu \
      tests/test_hstu_triton.py -k "ctx" --tb=short 2>&1 | tail -6
  mkdir -p $OUT/gd_bench
  OUT=$OUT/gd_bench timeout 200 bash benchmarks/run_device.sh --family gated_delta --suite H16-8seqs,H16-1seq \
      --backends triton 2>&1 | grep -E "SM clock|triton  " | head
fi
echo "elapsed $((SECONDS - T0)) s"
