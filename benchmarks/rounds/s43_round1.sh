# Session 43 round 1 (issue #5): the split dK/dV loop mask without the contextual term (s42_ctx_out_mask.diff applied
# to the tree) against the same kernel with the term (same process), then host against kernel time per row for
# jagattn and GR (benchmarks/host_vs_kernel.py; carry peers).
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s43_round1.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 200 python3 benchmarks/src_variant_ab.py --family hstu --rows ctx6-w256 \
    --variants benchmarks/rounds/s42_ctx_out_mask_variants.py --repeats 3 --profile --out $OUT/ab 2>&1 | grep -v "^\[" | grep -v warn | tail -8
echo "ab $((SECONDS - T0)) s"
export JAGATTN_GR_COMMIT=$(cat peers/gr/COMMIT 2>/dev/null)
PYTHONPATH=src:peers/gr timeout 330 python3 benchmarks/host_vs_kernel.py --family hstu \
    --rows recsys,B256-N1024,ctx6-w256,B128-N2048 --impls triton,gr_triton 2>&1 | grep -v -i warn | tee $OUT/host_vs_kernel.txt
echo "elapsed $((SECONDS - T0)) s"
