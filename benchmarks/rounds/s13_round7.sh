# Session 13, round 7 (kind nvidia-h200, timeout_s 595): the new bwd_dqkwg (32,4,3,64) / bwd_wy (64,4,2)
# defaults: (a) does the gk backward at fp16 K=V=128 with 4 chains fit in shared memory (the local sm_90
# compile of benchmarks/gated_delta_shared_check.py puts _gated_delta_bwd_gk_dhu_kernel at 238 KB, over the
# 227 KB limit; that kernel is unchanged this session); (b) every gated delta gpu test (scalar gate, gk).
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s13_round7.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 120 python3 - <<'PY' 2>&1 | tee $OUT/gk_fp16_probe.log | grep -v Warn
import torch, jagattn
for lens in ([70, 130], [4096] * 2):
    t = sum(lens); cu = torch.tensor([0] + lens, device="cuda").cumsum(0).to(torch.int32)
    q, k = (torch.randn(t, 2, 128, device="cuda", dtype=torch.float16) for _ in range(2))
    v = torch.randn(t, 2, 128, device="cuda", dtype=torch.float16)
    g = -torch.rand(t, 2, device="cuda"); gk = -torch.rand(t, 2, 128, device="cuda")
    beta = torch.rand(t, 2, device="cuda", dtype=torch.float16)
    leaves = [x.requires_grad_() for x in (q, k, v, g, gk, beta)]
    try:
        o, _ = jagattn.gated_delta_rule(q, k, v, g, beta, gk=gk, cu_seqlens=cu, use_qk_l2norm=True, backend="triton")
        o.float().square().sum().backward()
        torch.cuda.synchronize()
        print(lens, "gk fp16 K=V=128 fwd+bwd ok, finite:", all(bool(torch.isfinite(x.grad).all()) for x in leaves))
    except Exception as e:
        print(lens, "gk fp16 K=V=128 FAILED:", type(e).__name__, str(e)[:300])
PY
PYTHONPATH=src timeout $((575-SECONDS+T0)) python3 -m pytest -q -m gpu -n 4 --durations=5 \
  tests/test_gated_delta_triton.py tests/test_gated_delta_gk.py 2>&1 | tee $OUT/gpu_tests.log | grep -v Warn | tail -12
echo "done t=$((SECONDS-T0))"
