# Session 13, round 5 (kind nvidia-h200, timeout_s 595): launch-config candidates of the parallel backward
# kernels on the current code (bwd_wy, bwd_dqkwg, and fwd_wu, which also runs in the backward), each timed
# as the whole chunk backward (or the w/u kernel alone) on H16-8seqs and H16-1seq
# (benchmarks/gated_delta_triton.py breakdown; sessions 3-5 swept older kernels).
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s13_round5.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 570 python3 benchmarks/gated_delta_triton.py --out $OUT --no-fla --rows H16-8seqs \
  --profile-rows none --breakdown-rows H16-8seqs,H16-1seq --variants bwd_wy,bwd_dqkwg,fwd_wu 2>&1 \
  | tee $OUT/sweep.log | grep -v Warn | cut -c1-250
echo "done t=$((SECONDS-T0))"
