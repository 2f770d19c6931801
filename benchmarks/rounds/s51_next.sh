# Session 51's prepared device round (no device time was left): the direct plain launch (_core/launch.DIRECT, on by
# default since 00f2236; JAGATTN_DIRECT_LAUNCH=0 restores wrap_triton) on the GPU.
#   tests  the gpu tests of the launch, replay, eager-fast, export, compile and CUDA-graph modules plus HSTU and the
#          gated delta rule's opcheck / compile / production cases, with DIRECT on (4 workers)
#   host   benchmarks/gd_host_time.py with DIRECT on and off, alternated twice (host time per call and do_bench);
#          expected: ~10-20 us less host time per launch with DIRECT on (~5 launches per forward, ~11 per backward)
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s51_next.sh [tests|host]
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
if [ "${1:-host}" = tests ]; then
  PYTHONPATH=src timeout 560 python3 benchmarks/gpu_tests_parallel.py --workers 4 --timeout 540 --out $OUT \
      tests/test_launch.py tests/test_launch_replay.py tests/test_eager_fast.py tests/test_export.py \
      tests/test_compile.py tests/test_cuda_graphs.py tests/test_hstu_triton.py 2>&1 | tail -8
  echo "tests rc=$? elapsed $((SECONDS - T0)) s"
fi
if [ "${1:-host}" = host ]; then
  for i in 1 2; do
    for d in 1 0; do
      JAGATTN_DIRECT_LAUNCH=$d PYTHONPATH=src timeout 120 python3 benchmarks/gd_host_time.py \
          --rows H16-8seqs,H16-1seq,H16-ragged 2>&1 | grep -v Warn | head -3 | sed "s/^/DIRECT=$d /" | tee -a $OUT/host.txt
    done
  done
  echo "host rc=$? elapsed $((SECONDS - T0)) s"
fi
