# Prepared in session 7 for session 8's second device call (kind nvidia-h200, carry ["peers/gr"], timeout_s 500):
# the eager fast path (jagattn._core.library.eager_call, default on; JAGATTN_EAGER_FAST=0 = the dispatcher),
# never run on a GPU. (1) host overhead per layer, fast and dispatcher (benchmarks/op_overhead.py); (2) the
# host-bound HSTU recsys row against GR in one run, with the fast path and without (session 6: fwd 0.91x
# GR, host 0.28-0.43 ms per forward); (3) the gpu tests of attention + export and HSTU through the fast
# path (JAGATTN_AUTOTUNE=0), and the gpu compile tests that must still take the dispatcher.
# Call: JAGATTN_GIT_SHA=<full sha> bash benchmarks/rounds/s8_round2.sh
source benchmarks/device_round_env.sh
mkdir -p $OUT/fast $OUT/dispatcher
PYTHONPATH="$PWD/src" timeout 120 python3 benchmarks/op_overhead.py --json $OUT/op_overhead.json 2>&1 | tee $OUT/op_overhead.log
echo "== t=$((SECONDS-T0)) recsys vs GR"
for m in 1 0; do
  d=$([ $m = 1 ] && echo fast || echo dispatcher)
  JAGATTN_EAGER_FAST=$m OUT=$OUT/$d timeout 100 bash benchmarks/run_device.sh --family hstu --suite hstu/recsys \
    --backends triton,gr_triton 2>&1 | tail -6
done
echo "== t=$((SECONDS-T0)) gpu tests"
JAGATTN_AUTOTUNE=0 PYTHONPATH="$PWD/src" timeout -s INT $((480 - (SECONDS-T0))) python3 -m pytest -q -m gpu \
  tests/test_attention_triton.py tests/test_export.py tests/test_hstu_triton.py -p no:cacheprovider 2>&1 \
  | tee $OUT/tests.log | tail -4
echo "== t=$((SECONDS-T0)) done"
