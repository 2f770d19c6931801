# Session 14, round 7 (kind nvidia-h200): host time of the public attention forward with autograd
# (benchmarks/attention_host_profile.py) on causal-mean512-hkv4 and -hkv16, and the per-layer host costs of
# every op (benchmarks/op_overhead.py).
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s14_round7.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
for r in causal-mean512-hkv4 causal-mean512-hkv16; do
  PYTHONPATH=src timeout 100 python3 benchmarks/attention_host_profile.py --row $r 2>&1 | grep -v Warn > $OUT/host_profile_$r.log
  head -3 $OUT/host_profile_$r.log
done
PYTHONPATH=src timeout 150 python3 benchmarks/op_overhead.py --json $OUT/op_overhead.json 2>&1 | grep -v Warn | tee $OUT/op_overhead.log | tail -40
echo "elapsed $((SECONDS - T0)) s"
