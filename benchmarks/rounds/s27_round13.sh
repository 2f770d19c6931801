# Session 27 round 13 (issues #4, #5, #6): the final tree. (1) gpu tests: attention (Gluon, determinism, compile,
# opcheck, production sizes, TMA paths, isolation), HSTU (Gluon, isolation), gated delta (isolation); (2) the attention
# suite against torch varlen_attn and FlexAttention.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s27_round13.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 300 python3 -m pytest -q -m gpu tests/test_attention_triton.py -p no:cacheprovider \
    -k "gluon or deterministic or compile or opcheck or production_sizes or dkdv_tma or cross_lengths or nonfinite" \
    > $OUT/gpu_tests_attention.log 2>&1
PYTHONPATH=src timeout 200 python3 -m pytest -q -m gpu tests/test_hstu_triton.py tests/test_gated_delta_triton.py \
    -p no:cacheprovider -k "gluon or nonfinite" > $OUT/gpu_tests_hstu_gd.log 2>&1
grep -E "passed|failed|^E  .*Error|^FAILED" $OUT/gpu_tests_*.log | cut -c1-200 | tail -15
echo "elapsed $((SECONDS - T0)) s"
mkdir -p $OUT/suite
OUT=$OUT/suite timeout 280 bash benchmarks/run_device.sh --family attention --backends triton,torch_varlen,flex \
    > $OUT/suite_stdout.txt 2>&1
grep -v "^\[" $OUT/suite/log.txt | grep -E "^[a-z0-9-]+:|^  (triton|torch_varlen|flex)" | cut -c1-200
cd $OUT && tar czf suite.tgz suite suite_stdout.txt && rm -rf suite suite_stdout.txt
echo "elapsed $((SECONDS - T0)) s"
