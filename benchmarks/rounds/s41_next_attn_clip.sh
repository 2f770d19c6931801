# Prepared in session 41, not yet run: the attention Gluon dK/dV kernel with its q / dO boxes clipped at the sequence's
# end (attention bwd_gluon.DKDV_CLIP 1 / 2 against 0): its gpu tests under every clip (SPEC rule, bitwise against the
# Triton kernel, isolation), then the same-process A/B on the attention suite's rows with per-kernel times.
# Triton 3.6 locally (sm90_resources): causal 255 registers with 152 / 136 / 144 B of spill stack for clip 0 / 1 / 2,
# both windows 152 / 152 / 160.
# Needs benchmarks/rounds/s41_attn_clip.diff applied to the tree first (git apply; the switch is not in the library).
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s41_next_attn_clip.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 240 python3 benchmarks/gpu_tests_parallel.py --workers 3 --timeout 230 --out $OUT/tests \
    -k "test_gpu_gluon or nonfinite_sequence_isolated" tests/test_attention_triton.py 2>&1 | tail -5
echo "tests $((SECONDS - T0)) s"
PYTHONPATH=src timeout 300 python3 benchmarks/src_variant_ab.py --family attention \
    --variants benchmarks/rounds/s41_attn_clip_variants.py --rows causal-mean512-hkv16,causal-mean2048-hkv4,skewed,causal-mean8192-hkv16 \
    --repeats 3 --profile --out $OUT/ab 2>&1 | grep -v Warn | grep -E "row|clip|default" | cut -c1-300
echo "elapsed $((SECONDS - T0)) s"
