# Prepared for session 54 (session 53 had no device time left for it):
#   chunked  the three CPU-designed chunked-fp32 cases that failed on cuda in session 53's round 7 (never run on a GPU
#            before: device rounds ran -m gpu), with the SPEC rule's messages (-rfE --tb=short): how far past the
#            bound, which tensor. Their path (triton_call: the chunked fp32 kernels, which on the GPU serve only the
#            small fp16/bf16 batches' fp32 route) did not change in session 53.
#   cuda     every non-gpu test of the gated delta files on cuda (4 workers): what else was never run on a GPU
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s54_next.sh [chunked|cuda]
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
case "${1:-chunked}" in
  chunked)
    JAGATTN_POISON=1 PYTHONPATH=src timeout 400 python3 -m pytest -q -p no:cacheprovider -rfE --tb=short \
        "tests/test_gated_delta_triton.py::test_triton_matches_reference" \
        "tests/test_gated_delta_triton.py::test_triton_opt_in_variant_matches_reference" 2>&1 \
        | grep -v "DEBUG\|Warn" | tail -80 | tee $OUT/chunked_fp32_on_cuda.txt ;;
  cuda)
    JAGATTN_POISON=1 PYTHONPATH=src timeout 560 python3 benchmarks/gpu_tests_parallel.py --workers 4 --timeout 540 \
        --out $OUT -m "not gpu" tests/test_gated_delta_triton.py tests/test_gated_delta_gk.py \
        tests/test_gated_delta_fp32_train.py 2>&1 | tail -40 ;;
esac
echo "rc=$? elapsed $((SECONDS - T0)) s"
