# Session 28 round 2 (issue #6): the segment store as a branch (round 1's predicated store slowed the forward's pass),
# "auto" only below one chain per SM, seg_chunks passed to the keep-T op. (1) A/B SEG=off,auto,32 on H16-1seq and
# H16-8seqs (32 forced there: the forward's cost of the store); (2) the gated delta gpu tests, 8 workers.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s28_round2.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 200 python3 benchmarks/gd_switch_ab.py --out $OUT \
    --switch jagattn.gated_delta.triton.chunk_fwd:SEG=off,auto,32 --rows H16-1seq,H16-8seqs > $OUT/ab.log 2>&1
grep -v "^\s*0\.0[0-9][0-9] " $OUT/ab.log | grep -v Warn | tail -40
echo "elapsed $((SECONDS - T0)) s"
mkdir -p $OUT/gpu
PYTHONPATH=src timeout 370 python3 benchmarks/gpu_tests_parallel.py --workers 8 --timeout 360 --out $OUT/gpu \
    tests/test_gated_delta_triton.py > $OUT/gpu_tests.log 2>&1
tail -12 $OUT/gpu_tests.log
grep -h -E "^FAILED|^E  .*Error| passed| failed" $OUT/gpu/gpu_tests_w*.log | cut -c1-300 | head -30
cd $OUT && tar czf gpu.tgz gpu && rm -rf gpu
echo "elapsed $((SECONDS - T0)) s"
