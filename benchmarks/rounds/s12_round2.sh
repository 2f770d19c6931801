# Session 12, round 2 (kind nvidia-h200, timeout_s 400, carry peers/gr): with the one-loop HSTU kernels
# (44f7ac7+), every listed and EXTRA config of the forward, dQ and dK/dV kernels on the five suite rows
# (SPEC checks first), GR in the same process. Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s12_round2.sh
export OUT=${OUT:-$PWD/.device-out}
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 360 python3 benchmarks/hstu_probe.py --out $OUT --deadline 320 \
  > $OUT/probe_stdout.log 2>&1; echo "probe rc $? t=$((SECONDS-T0))"
grep -A8 "^.*SUMMARY" $OUT/hstu_probe.log | cut -c1-500
