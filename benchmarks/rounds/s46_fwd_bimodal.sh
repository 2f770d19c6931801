# Prepared in session 46, not yet run. Sessions 46's A/B rounds read the gated delta H16-8seqs forward (triton only,
# identical code) at 0.75 ms in the 1st / 3rd bench process of a call and 0.87-0.95 ms in the 2nd / 4th. The suite's
# forward ratio against FLA (1.50x in session 36) depends on which mode a run lands in. This round separates
# per-process from per-position causes: six bench processes in a row (fwd only, no gate), then the same row timed
# six times in one process (gd_fwd_repeat below), with nvidia-smi's clocks / power / temperature before each.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s46_fwd_bimodal.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
for i in 1 2 3 4 5 6; do
  nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu,temperature.memory --format=csv,noheader
  PYTHONPATH=src timeout 120 python3 -m jagattn bench --family gated_delta --suite H16-8seqs --backends triton \
      --mode fwd --no-check 2>&1 | grep -E "^  triton  " | head -1
done
PYTHONPATH=src timeout 200 python3 - <<'PY'
import torch, triton, jagattn
from jagattn.testing import cu_seqlens, generator, randn, rand
gen = generator(0); t, h, d = 32768, 16, 128
q, k, v = (randn((t, h, d), generator=gen, dtype=torch.bfloat16, device="cuda") for _ in range(3))
g = torch.nn.functional.logsigmoid(randn((t, h), generator=gen, device="cuda"))
beta = rand((t, h), generator=gen, device="cuda").to(torch.bfloat16)
cu = cu_seqlens([4096] * 8, "cuda")
for req in (False, True):
    for x in (q, k, v, g, beta):
        x.requires_grad_(req)
    f = lambda: jagattn.gated_delta_rule(q, k, v, g, beta, cu_seqlens=cu, use_qk_l2norm=True, backend="triton")
    print("requires_grad", req, [round(triton.testing.do_bench(f, warmup=25, rep=100, return_mode="median"), 3) for _ in range(6)])
PY
echo "elapsed $((SECONDS - T0)) s"
