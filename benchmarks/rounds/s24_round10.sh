# Session 24 round 10 (issue #4): the attention suite against torch varlen_attn and FlexAttention on the H200 (the last
# full attention suite ran on an H100, session 21); no attention code change since (session 24's experiment reverted).
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s24_round10.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
timeout 500 bash benchmarks/run_device.sh --family attention --backends triton,torch_varlen,flex \
    2>&1 | grep -v Warn | grep -E "^[a-z].*:|^  triton|^  flex|^  torch|geometric" | cut -c1-200
echo "elapsed $((SECONDS - T0)) s"
