# Session 20 round 5 (issue #4): the five attention gpu tests that ran out of memory in round 4 (4 pytest processes
# on one GPU) again in one process; then the round-4 suite row whose forward read 0.473 ms (0.356 in round 3)
# twice more, ours and Flex, to tell noise from a change.
# Call (kind nvidia-h100-x1): JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s20_round5.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 420 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_attention_triton.py \
    -k "test_gpu_fp32_forward or (test_gpu_bf16_production_sizes and d128-causal-wide-gqa4)" 2>&1 | tail -4
echo "tests done $((SECONDS - T0)) s"
for i in 1 2; do
  timeout 60 bash benchmarks/run_device.sh --family attention --suite causal-mean512-hkv4,causal-mean512-hkv16 \
      --backends triton,flex 2>&1 | grep -E "^[a-z].*:|^  triton|^  flex" | cut -c1-200
done
echo "elapsed $((SECONDS - T0)) s"
