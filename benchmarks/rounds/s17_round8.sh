# Session 17, round 8 (kind nvidia-h100-x1): the attention suite against torch varlen_attn and FlexAttention with the
# session's final backward (row-padded lse2/delta), JAGATTN_AUTOTUNE=0 (first-listed configs), same run.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s17_round8.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
timeout 290 bash benchmarks/run_device.sh --family attention --backends triton,torch_varlen,flex \
    2>&1 | grep -v Warn | grep -E "^[a-z].*:|^  triton|^  flex|^  torch|geometric" | cut -c1-200
echo "elapsed $((SECONDS - T0)) s"
