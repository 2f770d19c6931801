# session 6, last device round (kind nvidia-h200, carry peers/hdhu): helper hdhu's round (branch s6-hdhu =
# main eae99c1 + h/dhu rewrite: production gpu tests, main vs branch rows + per-kernel profile, state-pass
# probe), then the branch's every-launch-config gpu test (covers main's new bwd_wy candidates), the HSTU
# host-side profile with cProfile, and benchmarks/op_overhead.py (host us per call, vs session 3's JSON).
# (peers/hdhu is a worktree of branch s6-hdhu; its benchmarks/s6_hdhu_round.sh and gated_delta_state_probe.py live on that branch)
set -o pipefail
export PYTHONUNBUFFERED=1
T1=$SECONDS
TOTAL_S=330 TEST_S=200 bash peers/hdhu/benchmarks/s6_hdhu_round.sh > /dev/null 2>&1
tail -60 $OUT/log.txt | grep -v "^\s*$" | cut -c1-200
echo "== t=$((SECONDS-T1)) every_launch_config (branch tree)"
(cd peers/hdhu && PYTHONPATH=$PWD/src timeout -s INT 100 python3 -m pytest -q -m gpu tests/test_gated_delta_triton.py \
  -k every_launch -p no:cacheprovider 2>&1 | tee $OUT/every_launch.txt | tail -6)
echo "== t=$((SECONDS-T1)) hstu host profile"
PYTHONPATH=$PWD/src timeout 50 python3 benchmarks/hstu_fwdbwd_profile.py --rows recsys --cprofile > $OUT/hstu_cprofile.txt 2>&1
grep -A3 "ms:" $OUT/hstu_cprofile.txt | head -4
echo "== t=$((SECONDS-T1)) op_overhead"
PYTHONPATH=$PWD/src timeout 30 python3 benchmarks/op_overhead.py --json $OUT/op_overhead.json > $OUT/op_overhead.txt 2>&1
tail -30 $OUT/op_overhead.txt
echo "== t=$((SECONDS-T1)) done"
