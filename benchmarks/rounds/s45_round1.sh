# Prepared in session 44, not run (its device time was spent): (1) the gated delta token loop's launch replay (opt-in
# since session 44): its gpu test, the gated delta gpu tests with replay forced on, the host time of a decoding step
# with replay off / on (alternated processes) — if the tests pass and the host time drops, drop default=False from
# _REC_REPLAY in gated_delta/ops.py and update the READMEs; (2) the CUDA-graph capture tests (tests/test_cuda_graphs.py,
# never run); (3) the bench's clock sampling (bench/clocks.py, never run on a GPU): one small hstu row, whose table
# must show an "SM clock while timed" line per implementation.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s44_next_round.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 120 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_launch_replay.py -k gated_delta \
    2>&1 | tail -3
JAGATTN_LAUNCH_REPLAY=1 PYTHONPATH=src timeout 300 python3 benchmarks/gpu_tests_parallel.py --workers 4 --timeout 290 \
    --out $OUT/tests tests/test_gated_delta_triton.py tests/test_gated_delta_gk.py 2>&1 | tail -6
grep -h -E "^FAILED|^ERROR" $OUT/tests/*.log 2>/dev/null | head -20
for r in 0 1 0 1; do
  JAGATTN_LAUNCH_REPLAY=$r PYTHONPATH=src timeout 60 python3 -W ignore benchmarks/gd_decode_host.py --seqs 64,256 \
      2>&1 | tee -a $OUT/decode_host.txt
  JAGATTN_LAUNCH_REPLAY=$r PYTHONPATH=src timeout 60 python3 -W ignore benchmarks/gd_decode_host.py --seqs 64 --gk \
      2>&1 | tee -a $OUT/decode_host.txt
done
PYTHONPATH=src timeout 200 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_cuda_graphs.py 2>&1 | tail -15
# the sampling's own cost on a host-bound row: recsys with JAGATTN_BENCH_CLOCKS=0 / 1, alternated
echo "elapsed $((SECONDS - T0)) s"
