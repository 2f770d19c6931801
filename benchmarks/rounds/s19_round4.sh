# Session 19 round 4: (issue #5) same-process A/B of benchmarks/rounds/s19_round4_variants.py on four hstu
# suite rows, five alternated passes, outputs compared bitwise; (issue #6) the gated delta gpu tests of the
# tree (session 18's dqkwg / gk_dqk grid order had only one of them run).
# Call (kind nvidia-h100-x1): JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s19_round4.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout -s INT 200 python3 benchmarks/src_variant_ab.py --family hstu \
    --variants benchmarks/rounds/s19_round4_variants.py --out $OUT --rows B256-N1024,ctx6-w256,B64-N4096,B128-N2048 \
    --repeats 5 2>&1 | grep -v "^\[\|Warn\|warn" | tee $OUT/ab.log | grep -v "bitwise'}$" | cut -c1-110
echo "A/B done $((SECONDS - T0)) s"
PYTHONPATH=src timeout -s INT $((585 - SECONDS + T0)) python3 -m pytest -q -m gpu tests/test_gated_delta_triton.py \
    tests/test_gated_delta_gk.py -p no:cacheprovider -rfE --durations=5 2>&1 | tee $OUT/gd_gpu_tests.log | tail -12
echo "elapsed $((SECONDS - T0)) s"
