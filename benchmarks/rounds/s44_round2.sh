# Session 44 round 2: is the forward kernel slower inside forward + backward than alone (ctx6-w256 round 1: 0.664 vs
# 0.596 ms), ours and GR's, with the SM clock and power; then the replay gpu tests (the HSTU one fixed: each call
# against the normal path on its own tensors).
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s44_round2.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
export JAGATTN_GR_COMMIT=$(cat peers/gr/COMMIT 2>/dev/null)
PYTHONPATH=src:peers/gr timeout 200 python3 -W ignore benchmarks/fwd_in_fwdbwd.py --rows ctx6-w256,B256-N1024 \
    --impls triton,gr_triton 2>&1 | grep -v "invalid_mask\|offs_m\[\|offs_n\[" | tee $OUT/fwd_in_fwdbwd.txt | cut -c1-420
echo "probe $((SECONDS - T0)) s"
PYTHONPATH=src timeout 100 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_launch_replay.py 2>&1 | tee $OUT/replay_tests.log | grep -E "passed|failed|^FAILED" | head
echo "elapsed $((SECONDS - T0)) s"
