# Session 33 round 7 (issue #6): (1) same-process A/B: the segmented recompute fused by default (H16-1seq; variant
# fuse_wu_fwd = unfused there) and wy's K K^T in its last key loop (wy_kk_late); (2) every gated delta gpu test on
# this tree (the production cases with 2 value heads run the fused segmented recompute).
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s33_round7.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 150 python3 benchmarks/src_variant_ab.py --family gated_delta --repeats 2 --out $OUT --profile \
    --variants benchmarks/rounds/s33_gd_variants.py --rows H16-1seq,H16-8seqs --only fuse_wu_fwd,wy_kk_late 2>&1 \
    | grep -v Warn > $OUT/ab_gd.log
grep -hE "^row|: \{|x[01]\.[0-9]+\)|not applicable|rror" $OUT/ab_gd.log | cut -c1-250
grep -hE "^row|kernels of one" $OUT/ab_gd.log | grep -oE "^row.*|^ *[a-z0-9_]+ kernels|_gated_delta_(bwd_wy|fwd_h|fwd_wu_loop)_kernel [0-9.]+" \
    | paste -sd' ' | sed 's/row /\nrow /g'
echo "A/B elapsed $((SECONDS - T0)) s"
mkdir -p $OUT/gpu
PYTHONPATH=src timeout 420 python3 benchmarks/gpu_tests_parallel.py --workers 6 --timeout 400 --out $OUT/gpu \
    tests/test_gated_delta_triton.py > $OUT/gpu_tests.log 2>&1
tail -8 $OUT/gpu_tests.log
grep -h -E "^FAILED|^E  .*Error" $OUT/gpu/gpu_tests_w*.log | cut -c1-300 | head -30
cd $OUT && tar czf gpu.tgz gpu && rm -rf gpu
echo "elapsed $((SECONDS - T0)) s"
