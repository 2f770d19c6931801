# Session 13, round 9 (kind nvidia-h200, timeout_s 400): attention dK/dV with its lse/delta loads one step
# ahead (bwd.PREFETCH_STATS 0/1), same process, alternated timings of the public backward, bitwise check,
# on four suite rows (benchmarks/attention_triton.py's inputs), then the attention gpu tests with it on.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s13_round9.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src:benchmarks timeout 240 python3 - <<'PY' 2>&1 | tee $OUT/ab_attn_prefetch.log | grep -v Warn
import numpy as np, torch, triton
import attention_triton as at
from jagattn.attention.triton import bwd
for name, mean, hkv, causal, window in [r for r in at.ROWS if r[0] in
        ("causal-m8192-kv16", "causal-m8192-kv4", "causal-m2048-kv16", "causal-m512-kv16", "causal-skewed-kv16")]:
    lengths = at.lengths_for(mean, seed=1234)
    cu = torch.tensor([0] + list(np.cumsum(lengths)), dtype=torch.int32, device="cuda")
    f = at.ours(cu, max(lengths), causal, window)
    g = torch.Generator(device="cpu").manual_seed(7)
    q = (torch.randn(at.TOTAL, at.HQ, at.D, generator=g) * 0.5).to("cuda", torch.bfloat16).requires_grad_()
    k = (torch.randn(at.TOTAL, hkv, at.D, generator=g) * 0.5).to("cuda", torch.bfloat16).requires_grad_()
    v = torch.randn(at.TOTAL, hkv, at.D, generator=g).to("cuda", torch.bfloat16).requires_grad_()
    do = torch.randn(at.TOTAL, at.HQ, at.D, generator=g).to("cuda", torch.bfloat16)
    def fb():
        f(q, k, v).backward(do)
    res, grads = {"0": [], "1": []}, {}
    for mode in ("0", "1"):
        bwd.PREFETCH_STATS = mode
        q.grad = k.grad = v.grad = None; fb(); grads[mode] = [x.grad.clone() for x in (q, k, v)]
    for _ in range(3):
        for mode in ("0", "1"):
            bwd.PREFETCH_STATS = mode
            with torch.no_grad():
                tf = triton.testing.do_bench(lambda: f(q, k, v), warmup=25, rep=100, return_mode="median")
            tfb = triton.testing.do_bench(fb, warmup=25, rep=100, grad_to_none=[q, k, v], return_mode="median")
            res[mode].append(tfb - tf)
    same = all(torch.equal(a, b) for a, b in zip(grads["0"], grads["1"]))
    print(f"{name:22s} bwd ms prefetch=0 {' '.join(f'{t:.3f}' for t in res['0'])} | prefetch=1 "
          f"{' '.join(f'{t:.3f}' for t in res['1'])} | bitwise {same}", flush=True)
PY
JAGATTN_ATTN_PREFETCH_STATS=1 PYTHONPATH=src timeout $((390-SECONDS+T0)) python3 -m pytest -q -m gpu -n 4 \
  tests/test_attention_triton.py 2>&1 | tee $OUT/gpu_tests.log | tail -3
echo "done t=$((SECONDS-T0))"
