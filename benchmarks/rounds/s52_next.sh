# Session 52's prepared device round: fp32 training on the token loop (JAGATTN_GD_FP32_TRAIN=recurrent, opt-in,
# CPU-verified only) and the two gated delta suite rows session 52's round 7 did not reach.
#   tests  every test of tests/test_gated_delta_fp32_train.py on the GPU (the CPU ones run on cuda there, plus the gpu
#          ones: the SPEC rule at ~900 tokens K = V = 64 with g and gk, full opcheck of both ops, compile fullgraph with
#          gradients), plus the forward-only token loop's own tests (its kernel gained the CK=0 checkpoint store; its
#          sm_90 PTX code is unchanged): launch replay, CUDA graphs, the recurrent forward; under JAGATTN_POISON=1
#   cost   benchmarks/gd_fp32_train_cost.py: fwd+bwd ms and peak of the token loop vs the chunked fp32 ops and the
#          reference (the first row's gradients against the fp32 reference)
#   suite  run_device.sh --family gated_delta --suite gated_delta/H16-1seq,gated_delta/H16-ragged (carry .whl)
# If tests pass and cost shows the token loop far faster than the reference, make FP32_TRAIN "recurrent" the default
# (backends.py) and update the reason text, the READMEs and test_fp32_train_routing_and_reasons.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s52_next.sh [tests|cost|suite]
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
case "${1:-tests}" in
  tests)
    JAGATTN_POISON=1 PYTHONPATH=src timeout 560 python3 -m pytest -q -p no:cacheprovider -rA \
        tests/test_gated_delta_fp32_train.py tests/test_launch_replay.py tests/test_cuda_graphs.py \
        "tests/test_gated_delta_triton.py::test_recurrent_forward_matches_reference" 2>&1 | tail -40 \
        | tee $OUT/fp32_train_tests.txt ;;
  cost)
    PYTHONPATH=src timeout 560 python3 benchmarks/gd_fp32_train_cost.py 2>&1 | grep -v Warn | tee $OUT/fp32_train_cost.txt ;;
  suite)
    timeout 570 bash benchmarks/run_device.sh --family gated_delta --suite gated_delta/H16-1seq,gated_delta/H16-ragged \
        --isolate --warmup-ms 5 --rep-ms 25 2>&1 | tail -30 ;;
esac
echo "rc=$? elapsed $((SECONDS - T0)) s"
