# Session 26 round 12 (issues #4, #5): both Gluon dK/dV kernels now build their TMA descriptors on the device (round
# 11: host-side descriptors made HSTU recsys's backward 0.65x, a host-bound row). (1) gpu tests of both families
# through the Gluon kernels; (2) same-process A/Bs against the Triton dK/dV kernels: attention on the host-bound mean-512
# rows and mean 8192 Hkv 16, HSTU on its four rows without a window; (3) host time per call, attention.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s26_round12.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 200 python3 -m pytest -q -m gpu tests/test_attention_triton.py -p no:cacheprovider \
    -k "gluon or compile or deterministic or dkdv_tma" > $OUT/gpu_tests_attn.log 2>&1
grep -E "passed|failed|^E  |^FAILED" $OUT/gpu_tests_attn.log | tail -8
PYTHONPATH=src timeout 150 python3 -m pytest -q -m gpu tests/test_hstu_triton.py -p no:cacheprovider \
    -k "gluon or production_sizes or deterministic or opcheck or compile or concurrent" > $OUT/gpu_tests_hstu.log 2>&1
grep -E "passed|failed|^E  |^FAILED" $OUT/gpu_tests_hstu.log | tail -8
echo "elapsed $((SECONDS - T0)) s"
PYTHONPATH=src timeout 150 python3 benchmarks/src_variant_ab.py --family hstu --repeats 3 --profile --out $OUT \
    --variants benchmarks/rounds/s26_hstu_variants.py --only triton_dkdv --rows B256-N1024,B128-N2048,B64-N4096,recsys \
    2>&1 | grep -v Warn > $OUT/ab_hstu.log
grep -E "^row|: \{|default:|triton_dkdv:" $OUT/ab_hstu.log | cut -c1-150
grep -E "kernels of" $OUT/ab_hstu.log | cut -c1-120
PYTHONPATH=src timeout 150 python3 benchmarks/src_variant_ab.py --family attention --repeats 3 --out $OUT \
    --variants benchmarks/rounds/s26_variants.py --only triton_all \
    --rows causal-mean512-hkv16,causal-mean512-hkv4,causal-mean8192-hkv16 2>&1 | grep -v Warn > $OUT/ab_attn.log
grep -E "^row|: \{|default:|triton_all:" $OUT/ab_attn.log | cut -c1-150
PYTHONPATH=src timeout 60 python3 benchmarks/rounds/s26_host_probe.py causal-mean512-hkv16,causal-mean512-hkv4 2>&1 | grep -v Warn
PYTHONPATH=src timeout 60 python3 benchmarks/rounds/s26_host_probe.py causal-mean512-hkv16,causal-mean512-hkv4 --triton 2>&1 | grep -v Warn
echo "elapsed $((SECONDS - T0)) s"
