# Prepared for session 55: the rest of the CPU-designed (non-gpu) tests on cuda. Session 54 ran those of
# test_gated_delta_{triton,gk,fp32_train}.py, test_attention_triton.py and test_hstu_triton.py on the H200 (the first
# time: device rounds ran -m gpu) and found eight tests that failed there, all in the tests (results
# 2026-11-29-s54-*). These are the other files' (test_api_fuzz.py's 1149 CPU-tensor cases left out).
#   rest     every other test file's non-gpu tests on cuda, 8 workers (a cut worker lists what it did not reach in
#            $OUT/gpu_tests_w<i>_not_run.txt and names its failures from pytest -v lines)
#   gated    the three gated delta files again (session 54's fixes, all 105 tests; 6 workers)
#   small    test_gpu_small_head_dims (K = 16/24/32 at 4329 tokens: bf16 on its speed path; session 54 ran it only at
#            1429 tokens, where bf16 takes the precise path)
#   suite1 / suite2  the gated delta suite vs FLA 0.6.0 in two calls (carry .whl): the last same-run suite of all five
#            rows is session 50's (sessions 52 and 53 re-ran three and two rows)
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s55_next.sh [rest|gated|small|suite1|suite2]
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
case "${1:-rest}" in
  rest)
    files=$(ls tests/test_*.py | grep -v -e test_api_fuzz -e test_gated_delta_triton -e test_gated_delta_gk \
        -e test_gated_delta_fp32_train -e test_attention_triton -e test_hstu_triton)
    JAGATTN_POISON=1 PYTHONPATH=src timeout 560 python3 benchmarks/gpu_tests_parallel.py --workers 8 --timeout 540 \
        --out $OUT -m "not gpu" $files 2>&1 | tail -60 ;;
  gated)
    JAGATTN_POISON=1 PYTHONPATH=src timeout 560 python3 benchmarks/gpu_tests_parallel.py --workers 6 --timeout 540 \
        --out $OUT -m "not gpu" tests/test_gated_delta_triton.py tests/test_gated_delta_gk.py \
        tests/test_gated_delta_fp32_train.py 2>&1 | tail -60 ;;
  small)
    JAGATTN_POISON=1 PYTHONPATH=src timeout 560 python3 benchmarks/gpu_tests_parallel.py --workers 6 --timeout 540 \
        --out $OUT -k small_head_dims tests/test_gated_delta_triton.py 2>&1 | tail -30 ;;
  suite1|suite2)
    rows=gated_delta/H16-8seqs,gated_delta/H32-8seqs,gated_delta/H16-64seqs
    [ "$1" = suite2 ] && rows=gated_delta/H16-1seq,gated_delta/H16-ragged
    timeout 570 bash benchmarks/run_device.sh --family gated_delta --suite $rows \
        --isolate --warmup-ms 5 --rep-ms 25 2>&1 | tail -30 ;;
esac
echo "rc=$? elapsed $((SECONDS - T0)) s"
