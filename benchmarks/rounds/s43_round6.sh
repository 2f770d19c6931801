# Session 43 round 6 (issue #4 follow-up): are the attention suite's small rows host-bound? host_vs_kernel.py for
# jagattn and torch's varlen_attn on the mean-512 rows and the skewed row.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s43_round6.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 200 python3 -W ignore benchmarks/host_vs_kernel.py --family attention \
    --rows causal-mean512-hkv16,causal-mean512-hkv4,skewed --impls triton,torch_varlen 2>&1 | tee $OUT/host_vs_kernel.txt
echo "elapsed $((SECONDS - T0)) s"
