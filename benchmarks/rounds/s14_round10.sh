# Session 14, round 10 (kind nvidia-h200, carry peers/gr): the attention suite against torch varlen_attn and
# FlexAttention, and the hstu suite against generative-recommenders' Triton HSTU (db1bf8f), with the session's
# final code (wide forward tile, old-style eager autograd Function). JAGATTN_AUTOTUNE=0 (first-listed configs).
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s14_round10.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
B=$OUT
mkdir -p $B/attention $B/hstu
OUT=$B/attention timeout 260 bash benchmarks/run_device.sh --family attention --backends triton,torch_varlen,flex \
    2>&1 | grep -v Warn | grep -E "^[a-z].*:|^  triton|^  flex|^  torch|geometric" | cut -c1-200
echo "== t=$((SECONDS-T0)) hstu"
OUT=$B/hstu timeout $((570 - (SECONDS-T0))) bash benchmarks/run_device.sh --family hstu --backends triton,gr_triton \
    2>&1 | grep -v Warn | grep -E "^[A-Za-z].*:|^  triton|^  gr|geometric" | cut -c1-200
echo "elapsed $((SECONDS - T0)) s"
