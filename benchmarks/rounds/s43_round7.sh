# Session 43 round 7 (issue #5 / attention): launch replay for the attention ops. The replay gpu tests first, then the
# attention / export / eager-fast gpu tests (replay on: the default), then host against kernel time on the small
# attention rows with replay off and on.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s43_round7.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 80 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_launch_replay.py 2>&1 | grep -E "passed|failed|^FAILED|Error" | head
echo "replay tests $((SECONDS - T0)) s"
PYTHONPATH=src timeout 230 python3 benchmarks/gpu_tests_parallel.py --workers 4 --timeout 220 --out $OUT/tests \
    tests/test_attention_triton.py tests/test_export.py tests/test_eager_fast.py 2>&1 | tail -5
grep -h -E "^FAILED|^ERROR" $OUT/tests/*.log 2>/dev/null | head -20
echo "tests $((SECONDS - T0)) s"
for r in 0 1; do
  echo "== JAGATTN_LAUNCH_REPLAY=$r"
  JAGATTN_LAUNCH_REPLAY=$r PYTHONPATH=src timeout 60 python3 -W ignore benchmarks/host_vs_kernel.py --family attention \
      --rows causal-mean512-hkv16,causal-mean512-hkv4 --impls triton 2>&1 | tee -a $OUT/host_vs_kernel_$r.txt
done
echo "elapsed $((SECONDS - T0)) s"
