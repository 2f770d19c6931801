# Session 25 round 10 (issue #6): round 6's K = 64 speed-path precision miss (final_state 1.05x the allowance) under
# the precision knobs, with the H16-8seqs times under each (benchmarks/rounds/s25_k64_case.py, one process each).
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s25_round10.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
for knob in "X=default" "JAGATTN_GD_BF16_KEEP=fwd_h" "JAGATTN_GD_BF16_KEEP=fwd_h,fwd_o" "JAGATTN_GD_BF16_FP32=h,vnew" \
    "JAGATTN_GD_BF16_KEEP=fwd_h JAGATTN_GD_BF16_FP32=h,vnew" "JAGATTN_GD_BF16_PRECISE=on"; do
  env $knob PYTHONPATH=src timeout 150 python3 benchmarks/rounds/s25_k64_case.py 2>&1 | grep -v Warn | tail -3 | cut -c1-400
done | tee $OUT/r10.log
echo "elapsed $((SECONDS - T0)) s"
