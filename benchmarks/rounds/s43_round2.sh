# Session 43 round 2 (issue #5): where the GPU idles inside a forward + backward (CUDA API calls per call, the
# no-sleep timeline of B256), then every HSTU + gluon gpu test on the tree with s42_ctx_out_mask.diff applied.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s43_round2.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
export JAGATTN_GR_COMMIT=$(cat peers/gr/COMMIT 2>/dev/null)
PYTHONPATH=src:peers/gr timeout 150 python3 -W ignore benchmarks/host_vs_kernel.py --family hstu --api \
    --rows recsys,B256-N1024 --impls triton,gr_triton 2>&1 | grep -v "invalid_mask\|offs_m\[" | tee $OUT/host_vs_kernel.txt
PYTHONPATH=src timeout 90 python3 -W ignore benchmarks/bwd_timeline.py --family hstu --rows B256-N1024 --no-sleep \
    --reps 4 --trace-dir $OUT 2>&1 | tee $OUT/timeline.txt | cut -c1-220 | head -60
echo "timing $((SECONDS - T0)) s"
PYTHONPATH=src timeout 240 python3 benchmarks/gpu_tests_parallel.py --workers 4 --timeout 230 --out $OUT/tests \
    tests/test_hstu_triton.py tests/test_gluon.py 2>&1 | tail -5
grep -h -E "^FAILED|^ERROR" $OUT/tests/*.log 2>/dev/null | head -20
echo "elapsed $((SECONDS - T0)) s"
