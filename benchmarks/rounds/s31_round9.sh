# Session 31 round 9 (issue #5): the host time of one HSTU forward + backward with the Python layers trimmed this
# session (env reads cached, cheaper eager path) against the tree before (peers/old_src = git archive of the commit
# before, carried), alternated twice on the host-bound recsys row and B256 (bwd_timeline.py --no-sleep: do_bench and
# host ms per call); then the HSTU gpu tests on the new tree.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s31_round9.sh   (carry peers)
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
for pass in 1 2; do
  for tree in old new; do
    src=src; [ $tree = old ] && src=peers/old_src/src
    echo "== pass $pass, $tree"
    PYTHONPATH=$src timeout 100 python3 benchmarks/bwd_timeline.py --family hstu --no-sleep --reps 2 -n 200 \
        --trace-dir $OUT --rows recsys,B256-N1024 2>&1 | grep -E "^row|host"
  done
done
rm -f $OUT/trace_*.json
echo "elapsed $((SECONDS - T0)) s"
PYTHONPATH=src timeout 200 python3 -m pytest -q -m gpu -p no:cacheprovider --tb=short -rfE tests/test_hstu_triton.py \
    > $OUT/gpu_tests.log 2>&1
grep -E "passed|failed|^E  .*Error|^FAILED" $OUT/gpu_tests.log | cut -c1-220 | tail -15
echo "elapsed $((SECONDS - T0)) s"
