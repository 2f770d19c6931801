# Session 39, round 3: a torch.profiler host trace of one recsys forward + backward (both threads).
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 240 python3 benchmarks/host_trace.py --rows recsys 2>&1 | tee $OUT/host_trace.log | grep -v Warning | cut -c1-160
echo "elapsed $((SECONDS - T0)) s"
