# Session 26 round 9 (issue #4): round 8's suite had the mean-512 rows' backward 1.07-1.36 ms (rounds 4 / 7: 0.91-1.02):
# (1) host time per forward + backward call, Gluon vs Triton dK/dV; (2) the suite rows again, Gluon (default) with the
# peers, then the Triton dK/dV kernel alone (JAGATTN_ATTN_GLUON=0) in its own process.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s26_round9.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
ROWS=causal-mean512-hkv16,causal-mean512-hkv4,causal-mean8192-hkv16,causal-mean8192-hkv4,skewed
PYTHONPATH=src timeout 120 python3 benchmarks/rounds/s26_host_probe.py $ROWS 2>&1 | grep -v Warn
PYTHONPATH=src timeout 120 python3 benchmarks/rounds/s26_host_probe.py $ROWS --triton 2>&1 | grep -v Warn
echo "elapsed $((SECONDS - T0)) s"
mkdir -p $OUT/gluon $OUT/tri
OUT=$OUT/gluon timeout 200 bash benchmarks/run_device.sh --family attention --suite $ROWS \
    --backends triton,torch_varlen,flex > /dev/null 2>&1
JAGATTN_ATTN_GLUON=0 OUT=$OUT/tri timeout 120 bash benchmarks/run_device.sh --family attention --suite $ROWS \
    --backends triton > /dev/null 2>&1
for f in gluon tri; do echo "== $f"; grep -v "^\[" $OUT/$f/log.txt | grep -E "^[a-z0-9-]+:|^  (triton|torch_varlen|flex)" | cut -c1-170; done
cd $OUT && tar czf suites.tgz gluon tri && rm -rf gluon tri
echo "elapsed $((SECONDS - T0)) s"
