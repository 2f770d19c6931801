# Session 12, round 1 (kind nvidia-h200, timeout_s 595, carry peers/gr): the HSTU kernels with one
# software-pipelined loop (JAGATTN_HSTU_ONE_LOOP, default 1) against the per-phase loops and GR, then the
# HSTU gpu tests of the new default. Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s12_round1.sh
export OUT=${OUT:-$PWD/.device-out}
source benchmarks/device_round_env.sh
# (1) every config / switch candidate incl. "phases" (the old loop layout) on the five suite rows, each
#     first checked by the SPEC rule on small batches; GR in the same process
PYTHONPATH=src timeout 330 python3 benchmarks/hstu_probe.py --out $OUT --deadline 290 --no-extra \
  > $OUT/probe_stdout.log 2>&1; echo "probe rc $? t=$((SECONDS-T0))"
grep -A8 "^.*SUMMARY" $OUT/hstu_probe.log | cut -c1-400
# (2) the gpu tests of the new default (first configs)
JAGATTN_AUTOTUNE=0 PYTHONPATH=src timeout -s INT $((580 - (SECONDS-T0))) python3 -m pytest -q -m gpu \
  tests/test_hstu_triton.py -n 4 -p no:cacheprovider -rfE 2>&1 | tee $OUT/hstu_gpu_tests.log | tail -8
echo "done t=$((SECONDS-T0))"
