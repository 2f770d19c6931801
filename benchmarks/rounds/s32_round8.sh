# Session 32 round 8 (issue #6), for the next session: the forward's fused state pass with the X factor on the narrow
# side (benchmarks/rounds/s32_fwd_x_narrow.diff; round 7 measured it, -5-6% forward on the fused rows) under the gpu
# tests that run the fused pass (FUSE_WU / FUSE_O at V blocks of 64: many chains), plus opcheck and compile; 6
# processes. Applies the diff to the device's copy of the tree if it is not in the library yet (land it with the
# diff applied here once this passes). Refused in session 32 (device time), so not yet run.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s32_round8.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
python3 - <<'PY'
# the diff's change, as round 7's variant (s32_gd_variants.py "fwd_x_narrow"), applied to the device's copy of the tree
import runpy
(mod, fn, old, new), = runpy.run_path("benchmarks/rounds/s32_gd_variants.py")["VARIANTS"]["fwd_x_narrow"]
p = "src/jagattn/gated_delta/triton/chunk_fwd.py"
s = open(p).read()
if s.count(old) == 1:
    open(p, "w").write(s.replace(old, new))
    print("applied fwd_x_narrow")
PY
echo "old X tile lines left (0 = the narrow form runs): $(grep -c 'b_x = b_k.to(tl.float32) \* tl.where(m_t, b_beta' src/jagattn/gated_delta/triton/chunk_fwd.py)"
mkdir -p $OUT/gpu
K="odd-multihead or many-chains or fuse_o or hv_eq_h or every_launch_config or opcheck or compile or fp16_small"
PYTHONPATH=src timeout 330 python3 benchmarks/gpu_tests_parallel.py --workers 6 --timeout 320 --out $OUT/gpu -k "$K" \
    tests/test_gated_delta_triton.py > $OUT/gpu_tests.log 2>&1
tail -8 $OUT/gpu_tests.log
grep -h -E "^FAILED|^E  .*Error" $OUT/gpu/gpu_tests_w*.log | cut -c1-300 | head -30
cd $OUT && tar czf gpu.tgz gpu && rm -rf gpu
echo "elapsed $((SECONDS - T0)) s"
