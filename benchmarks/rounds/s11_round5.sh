# Session 11, round 5 (kind nvidia-h200, timeout_s 590, carry .whl): the full default suite of the
# gated_delta and attention families with every peer in the same run (the last full table is session
# 3's). Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s11_round5.sh
export JAGATTN_AUTOTUNE=0
echo "sha $JAGATTN_GIT_SHA"
timeout 570 bash benchmarks/run_device.sh --family gated_delta,attention --suite default --isolate \
  --warmup-ms 5 --rep-ms 25 --time-budget 520
