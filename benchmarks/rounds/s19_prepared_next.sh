# Prepared in session 19, not run (device time spent) — the first round of the next session (issue #4):
#  1. the attention suite against torch varlen_attn and FlexAttention with the TMA forward (fwd.use_tma, adopted in
#     session 19 from a same-process A/B only: forward 1.017-1.065x);
#  2. the TMA k/v loads in the dQ kernel again (session 14's dq_desc variant; session 19 round 11: backward
#     1.01-1.06x) with the fixed src_variant_ab.py, to decide whether to adopt it like the forward.
# Call (kind nvidia-h100-x1): JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s19_prepared_next.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
timeout 300 bash benchmarks/run_device.sh --family attention --backends triton,torch_varlen,flex \
    2>&1 | grep -v Warn | grep -E "^[a-z].*:|^  triton|^  flex|^  torch|geometric" | cut -c1-200
echo "suite done $((SECONDS - T0)) s"
PYTHONPATH=src timeout -s INT $((570 - SECONDS + T0)) python3 benchmarks/src_variant_ab.py --family attention \
    --variants benchmarks/rounds/s19_round11_variants.py --only dq_desc --out $OUT --repeats 3 \
    --rows causal-mean8192-hkv4,skewed,causal-mean8192-hkv16,noncausal-mean2048,causal-mean2048-hkv4 \
    2>&1 | grep -v "^\[\|Warn\|warn" | tee $OUT/ab.log | cut -c1-140
echo "elapsed $((SECONDS - T0)) s"
