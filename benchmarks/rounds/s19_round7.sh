# Session 19 round 7 (issue #5): hstu_probe of every forward / dQ / dK-dV config with the session's kernels
# (scalar block pointers, edge masks without the range term changed each loop's instruction mix), on the rows
# below the targets (B256-N1024, ctx6-w256) and B128-N2048.
# Call (kind nvidia-h100-x1): JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s19_round7.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 560 python3 benchmarks/hstu_probe.py --out $OUT --deadline 500 --candidates fwd:,dq:,dkdv: \
    --rows B256-N1024,ctx6-w256,B128-N2048 --no-gr 2>&1 | grep -v Warn | grep -A70 SUMMARY
echo "elapsed $((SECONDS - T0)) s"
