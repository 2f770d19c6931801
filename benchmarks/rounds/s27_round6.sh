# Session 27 round 6 (issues #4, #5): (1) the attention gpu tests through this tree (the Gluon decision moved ahead of
# the dQ launch, cached shared layouts); (2) the HSTU Gluon dK/dV launch against the Triton one on recsys and B256
# (host and do_bench, alternated: s27_hstu_host.py); (3) the attention suite against varlen_attn and FlexAttention.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s27_round6.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 280 python3 -m pytest -q -m gpu tests/test_attention_triton.py -p no:cacheprovider \
    -k "gluon or deterministic or compile or opcheck or production_sizes or dkdv_tma or cross_lengths" \
    > $OUT/gpu_tests.log 2>&1
grep -E "passed|failed|^E  |^FAILED" $OUT/gpu_tests.log | tail -15
echo "elapsed $((SECONDS - T0)) s"
PYTHONPATH=src timeout 150 python3 benchmarks/rounds/s27_hstu_host.py recsys,B256-N1024 2>&1 | grep -v Warn \
    | tee $OUT/hstu_host.log
echo "elapsed $((SECONDS - T0)) s"
mkdir -p $OUT/suite
OUT=$OUT/suite timeout 280 bash benchmarks/run_device.sh --family attention --backends triton,torch_varlen,flex \
    > $OUT/suite_stdout.txt 2>&1
grep -v "^\[" $OUT/suite/log.txt | grep -E "^[a-z0-9-]+:|^  (triton|torch_varlen|flex)" | cut -c1-200
cd $OUT && tar czf suite.tgz suite suite_stdout.txt && rm -rf suite suite_stdout.txt
echo "elapsed $((SECONDS - T0)) s"
