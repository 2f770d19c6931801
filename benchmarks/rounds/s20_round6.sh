# Session 20 round 6 (issue #5): q / dO of the HSTU dK/dV loop through TMA descriptors (hstu.triton.bwd.hstu_bwd_tma,
# bounded at max(a1, ctx_end); the attention dK/dV loop gained 8-13% from the same in rounds 3-4). 1. same-process
# A/B against its pointer loads (hstu_ptr) on the five hstu rows; 2. the HSTU gpu tests (incl. the new
# test_gpu_bwd_tma_loads: bitwise equal to the pointer loads) in 4 processes beside a GPU fuzz of the SPEC rule
# (hstu, bf16, lengths x16: context, windows, targets through the TMA path).
# Call (kind nvidia-h100-x1): JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s20_round6.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 240 python3 benchmarks/src_variant_ab.py --family hstu \
    --variants benchmarks/rounds/s20_variants.py --only hstu_ptr --out $OUT --repeats 4 \
    2>&1 | grep -v "^\[\|Warn\|warn" | tee $OUT/ab_hstu.log | cut -c1-170
echo "ab done $((SECONDS - T0)) s"
B=$((560 - SECONDS + T0))
PYTHONPATH=src timeout $B python3 benchmarks/fuzz_spec_rule.py --op hstu --device cuda --dtype bf16 --scale 16 \
    --cases 400 --time-budget $((B - 40)) >$OUT/fuzz.log 2>&1 &
PYTHONPATH=src python3 benchmarks/gpu_tests_parallel.py --workers 3 --timeout $((B - 10)) --out $OUT tests/test_hstu_triton.py \
    2>&1 | tail -6
wait
grep -v "^\[\|Warn\|warn" $OUT/fuzz.log | grep -i "fail\|cases" | tail -8 | cut -c1-300
echo "elapsed $((SECONDS - T0)) s"
