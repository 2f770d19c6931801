# Session 38 round 5: gk with T^-1 and P kept from the forward (ops.gated_delta_fwd_gk_keep, taken when a backward
# can follow): the 6 gk gpu tests (opcheck now includes the keep ops; compile runs them through the public API),
# then the gk row with the keep ops off (JAGATTN_GD_SAVE_T=off) and on (the default), same machine.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s38_round5.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 175 python3 benchmarks/gpu_tests_parallel.py --workers 6 --timeout 170 --out $OUT tests/test_gated_delta_gk.py 2>&1 | tail -8
echo "elapsed $((SECONDS - T0)) s"
for mode in off auto; do
  mkdir -p $OUT/save_t_$mode
  JAGATTN_GD_SAVE_T=$mode PYTHONPATH=src timeout 60 python3 benchmarks/gk_diag_check.py --out $OUT/save_t_$mode --only kkt2w 2>&1 | tee $OUT/save_t_$mode/gk_diag_check.log | cut -c1-300
  echo "elapsed $((SECONDS - T0)) s"
done
