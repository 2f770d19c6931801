# Session 41 round 2 (issue #5): the clip modes of the HSTU Gluon kernels (bwd_gluon.DKDV_CLIP / DQ_CLIP: 0 zeroed in
# shared memory, 1 every walked box through the 3-D host_desc_to_end view, 2 only boxes past the end): gpu tests
# (SPEC rule with clip 1 / 0, bitwise across 0 / 1 / 2, isolation under each), then the same-process A/B.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s41_round2.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 240 python3 -m pytest -q -m gpu tests/test_hstu_triton.py -p no:cacheprovider \
    -k "test_gpu_gluon or nonfinite_sequence_isolated" 2>&1 | grep -E "passed|failed|Error|error" | tail -8
echo "tests $((SECONDS - T0)) s"
PYTHONPATH=src timeout 330 python3 benchmarks/src_variant_ab.py --family hstu --variants benchmarks/rounds/s41_clip_variants.py \
    --rows B256-N1024,B128-N2048,ctx6-w256,B64-N4096 --repeats 3 --profile --out $OUT/ab 2>&1 | grep -v Warn | grep -E "row|dkdv|dq|default" | sed 's/void at::native::vectorized_elementwise_kernel<8, at::native::CUDAFunc [0-9.]*//' | cut -c1-300
echo "elapsed $((SECONDS - T0)) s"
