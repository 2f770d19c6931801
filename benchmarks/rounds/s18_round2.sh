# Session 18 round 2 (issue #5), after round 1's grid order (L2_GROUP default 1):
#  1. the recsys row's group values by kernel device time (torch profiler; round 1's wall times on this
#     host-bound row spread 0.18-0.60 ms), 4 alternations;
#  2. hstu_probe: every forward / dQ / dK/dV config (lists + EXTRA) on B256-N1024, ctx6-w256, B128-N2048: the
#     first-listed configs were chosen while the kernels were DRAM-bound (session 17 ncu), re-rank them now.
# Call (kind nvidia-h100-x1, carry peers): JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s18_round2.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
export PYTHONPATH=src:peers/gr
timeout 120 python3 benchmarks/hstu_l2_group_ab.py --out $OUT --rows recsys --kernel-time --repeats 4 \
    --groups old,1,8,32,128 2>&1 | grep -v "Warn\|invalid_mask\|offs_m\|offs_n" | tail -12
echo "recsys done $((SECONDS - T0)) s"
timeout 400 python3 benchmarks/hstu_probe.py --out $OUT --deadline 360 --candidates fwd:,dq:,dkdv: \
    --rows B256-N1024,ctx6-w256,B128-N2048 --no-gr 2>&1 | grep -v Warn | grep -A60 SUMMARY
echo "elapsed $((SECONDS - T0)) s"
