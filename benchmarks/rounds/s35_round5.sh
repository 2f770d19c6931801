# Session 35 round 5 (issue #6): the forward's state pass two chunks a step (chunk_fwd.PAIR), A/B in one process
# (benchmarks/rounds/s35_pair_ab.py), then every gated delta gpu test with JAGATTN_GD_PAIR=on (the pair steps
# wherever the bf16 forward's pass is unfused).
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s35_round5.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 200 python3 benchmarks/rounds/s35_pair_ab.py --out $OUT --passes 2 2>&1 | grep -v Warn | tee $OUT/ab.log
echo "elapsed $((SECONDS - T0)) s"
mkdir -p $OUT/gpu
JAGATTN_GD_PAIR=on PYTHONPATH=src timeout 370 python3 benchmarks/gpu_tests_parallel.py --workers 6 --timeout 350 \
    --out $OUT/gpu tests/test_gated_delta_triton.py > $OUT/gpu_tests.log 2>&1
tail -8 $OUT/gpu_tests.log
grep -h -E "^FAILED|^E  .*Error|passed|failed" $OUT/gpu/gpu_tests_w*.log | cut -c1-300 | head -30
cd $OUT && tar czf gpu.tgz gpu && rm -rf gpu
echo "elapsed $((SECONDS - T0)) s"
