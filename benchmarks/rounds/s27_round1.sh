# Session 27 round 1 (issue #4): the attention backward's timeline (idle gaps between kernels inside one do_bench-like
# repetition) on the mean-8192 Hkv-16 row, and the host time (with a cProfile) of one forward + backward call on the
# mean-512 rows, Gluon dK/dV (default) and the Triton kernel.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s27_round1.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
mkdir -p $OUT/traces
{
PYTHONPATH=src timeout 200 python3 benchmarks/bwd_timeline.py --trace-dir $OUT/traces \
    --rows causal-mean8192-hkv16,skewed,causal-mean512-hkv16 2>&1 | grep -v Warn
PYTHONPATH=src timeout 150 python3 benchmarks/bwd_timeline.py --trace-dir $OUT/traces --cprofile \
    --rows causal-mean512-hkv4 2>&1 | grep -v Warn
JAGATTN_ATTN_GLUON=0 PYTHONPATH=src timeout 150 python3 benchmarks/bwd_timeline.py \
    --trace-dir $OUT/traces --rows causal-mean512-hkv4,causal-mean8192-hkv16 2>&1 | grep -v Warn
echo "elapsed $((SECONDS - T0)) s"
} > $OUT/log.txt 2>&1
cd $OUT && tar czf traces.tgz traces && rm -rf traces
cat $OUT/log.txt
