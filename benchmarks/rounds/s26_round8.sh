# Session 26 round 8 (issue #4): the final tree (Gluon dK/dV with lse2 and delta loaded together). (1) the attention
# gpu tests through it; (2) the attention suite against torch varlen_attn and FlexAttention.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s26_round8.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 280 python3 -m pytest -q -m gpu tests/test_attention_triton.py -p no:cacheprovider \
    -k "gluon or deterministic or compile or opcheck or production_sizes or dkdv_tma or cross_lengths" \
    > $OUT/gpu_tests.log 2>&1
grep -E "passed|failed|^E  |^FAILED" $OUT/gpu_tests.log | tail -15
echo "elapsed $((SECONDS - T0)) s"
mkdir -p $OUT/suite
OUT=$OUT/suite timeout 280 bash benchmarks/run_device.sh --family attention --backends triton,torch_varlen,flex \
    > $OUT/suite_stdout.txt 2>&1
grep -v "^\[" $OUT/suite/log.txt | grep -E "^[a-z0-9-]+:|^  (triton|torch_varlen|flex)" | cut -c1-200
cd $OUT && tar czf suite.tgz suite suite_stdout.txt && rm -rf suite suite_stdout.txt
echo "elapsed $((SECONDS - T0)) s"
