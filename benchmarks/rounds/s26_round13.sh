# Session 26 round 13 (issues #4, #5): gpu tests of the final tree (attention's Gluon dK/dV kernel with host-side
# descriptors through _core/gluon.py, the default; HSTU's opt-in Gluon kernel).
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s26_round13.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 330 python3 -m pytest -q -m gpu tests/test_attention_triton.py -p no:cacheprovider \
    -k "gluon or compile or deterministic or dkdv_tma or production_sizes or opcheck" > $OUT/gpu_tests_attn.log 2>&1
grep -E "passed|failed|^E  |^FAILED" $OUT/gpu_tests_attn.log | tail -8
PYTHONPATH=src timeout 120 python3 -m pytest -q -m gpu tests/test_hstu_triton.py -p no:cacheprovider \
    -k "gluon or deterministic or compile" > $OUT/gpu_tests_hstu.log 2>&1
grep -E "passed|failed|^E  |^FAILED" $OUT/gpu_tests_hstu.log | tail -8
echo "elapsed $((SECONDS - T0)) s"
