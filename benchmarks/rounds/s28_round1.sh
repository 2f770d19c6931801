# Session 28 round 1 (issue #6): the backward's recompute in segments (chunk_fwd.SEG / seg_chunks). (1) same-process
# A/B of SEG=off,auto,16,64 on the rows with few chains (outputs vs "off", fwd / bwd ms, peak, per-kernel profile);
# (2) the gated delta gpu tests (production sizes run "auto": 8-chunk segments at 1-2 heads).
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s28_round1.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 320 python3 benchmarks/gd_switch_ab.py --out $OUT \
    --switch jagattn.gated_delta.triton.chunk_fwd:SEG=off,auto,16,64 --rows H16-1seq,H16-ragged,H16-8seqs \
    > $OUT/ab.log 2>&1
tail -60 $OUT/ab.log
echo "elapsed $((SECONDS - T0)) s"
PYTHONPATH=src timeout 250 python3 benchmarks/gpu_tests_parallel.py --workers 6 --timeout 240 --out $OUT \
    tests/test_gated_delta_triton.py > $OUT/gpu_tests.log 2>&1
tail -12 $OUT/gpu_tests.log
grep -h -E "^FAILED|^E  .*Error" $OUT/gpu_tests_w*.log | cut -c1-300 | head -20
echo "elapsed $((SECONDS - T0)) s"
