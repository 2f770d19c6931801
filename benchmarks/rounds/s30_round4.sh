# Session 30 round 4 (issue #4): (1) the attention suite against torch varlen_attn and FlexAttention with the Gluon dQ
# kernel; (2) round 2's order-dependent gpu failures (fp32 forward at D 128 / 256 after a bf16 production case; the
# fp32 route after the export tests; each passed alone in round 3), replayed in the same orders, errors printed.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s30_round4.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
mkdir -p $OUT/suite
OUT=$OUT/suite timeout 290 bash benchmarks/run_device.sh --family attention --backends triton,torch_varlen,flex \
    > $OUT/suite_stdout.txt 2>&1
grep -v "^\[" $OUT/suite/log.txt | grep -E "^[a-z0-9-]+:|^  (triton|torch_varlen|flex)" | cut -c1-200
echo "elapsed $((SECONDS - T0)) s"
A=tests/test_attention_triton.py
R=tests/test_fp32_route.py::test_gpu_route_every_head_dim
E=tests/test_export.py
run() { PYTHONPATH=src timeout 230 python3 -m pytest -q -p no:cacheprovider --tb=short -rfE "${@:2}" > $OUT/diag_$1.log 2>&1; }
run a "$A::test_gpu_bf16_production_sizes[d128-causal-wide-gqa4]" "$A::test_gpu_fp32_forward[1024-128]" &
run b "$A::test_gpu_bf16_production_sizes[d128-full-wide]" "$A::test_gpu_fp32_forward[1024-256]" &
run c "$E::test_export_attention" "$E::test_export_gated_delta" "$R[attention-16x16]" &
run d "$R[gated_delta-16x16]" &
wait
for f in $OUT/diag_*.log; do echo "== $f"; grep -hE "^E  |Error|passed|failed|^FAILED" "$f" | grep -v Warn | head -14 | cut -c1-260; done
cd $OUT && tar czf suite.tgz suite suite_stdout.txt diag_*.log && rm -rf suite suite_stdout.txt diag_*.log
echo "elapsed $((SECONDS - T0)) s"
