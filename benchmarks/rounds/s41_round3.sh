# Session 41 round 3 (issue #5): the HSTU Gluon dQ kernel with q (1) / q and dO (2) as the register operands of qk / dp
# (bwd_gluon.DQ_Q_REGS): bitwise gpu tests, then the same-process A/B (defaults: DKDV_CLIP 1, DQ_CLIP 0, DQ_Q_REGS 0).
# Needs the tree of fafcfd5 (the DQ_Q_REGS switch was removed in e64fb90).
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s41_round3.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 200 python3 -m pytest -q -m gpu tests/test_hstu_triton.py -p no:cacheprovider \
    -k "modes_same_bits or (test_gpu_gluon and dq- and 1-)" 2>&1 | grep -E "passed|failed|Error|error" | tail -8
echo "tests $((SECONDS - T0)) s"
PYTHONPATH=src timeout 330 python3 benchmarks/src_variant_ab.py --family hstu --variants benchmarks/rounds/s41_clip_variants.py \
    --only dq_qregs1,dq_qregs2 --rows B256-N1024,B128-N2048,ctx6-w256,B64-N4096,recsys --repeats 3 --profile --out $OUT/ab 2>&1 \
    | grep -v Warn | grep -E "row|dq_|default" | sed 's/void at::native::vectorized_elementwise_kernel<8, at::native::CUDAFunc [0-9.]*//' | cut -c1-300
echo "elapsed $((SECONDS - T0)) s"
