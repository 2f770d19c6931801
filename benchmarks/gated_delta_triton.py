"""Timing of jagattn's Triton gated delta rule on the BENCHMARKS.md rows (our kernel alone).

Rows (bf16, K=V=128, use_qk_l2norm=True, g = logsigmoid(randn) fp32, beta = sigmoid(randn) bf16,
32768 tokens): H=16 8 seqs, H=32 8 seqs, H=16 64 seqs, H=16 one sequence, H=16 ragged (lengths
uniform in [100, 8000]). Public function with ``backend="triton"`` (dispatch included), no initial
state, no final state. ``triton.testing.do_bench`` median after warm-up (each kernel runs its first,
verified config unless JAGATTN_GATED_DELTA_AUTOTUNE=1);
bwd = (fwd+bwd) - fwd. Peak memory of one fwd+bwd over the inputs. FLOPs (SPEC convention, per
token and value head, chunk 64): forward ``6KV + 6CK + 4CV``. A per-stage breakdown of the
kernels is printed for two rows.

Usage on the GPU machine: ``PYTHONPATH=src python3 benchmarks/gated_delta_triton.py --out $OUT``.
"""

from __future__ import annotations

import argparse
import json
import random
import time

import torch
import torch.nn.functional as F
import triton

import jagattn
from jagattn.gated_delta.triton import chunk_bwd as tb
from jagattn.gated_delta.triton import chunk_fwd as tf
from jagattn.gated_delta.triton.l2norm import l2norm_fwd

TOTAL = 32768
K = V = 128
C = 64


def lengths_for(kind: str, seed: int = 0) -> list[int]:
    if kind.startswith("equal"):
        n = int(kind.split(":")[1])
        return [TOTAL // n] * n
    rng = random.Random(seed)
    out: list[int] = []
    while sum(out) < TOTAL:
        out.append(rng.randint(100, 8000))
    out[-1] -= sum(out) - TOTAL
    return [n for n in out if n > 0]


ROWS = [
    ("H16-8seqs", 16, "equal:8"),
    ("H32-8seqs", 32, "equal:8"),
    ("H16-64seqs", 16, "equal:64"),
    ("H16-1seq", 16, "equal:1"),
    ("H16-ragged", 16, "ragged"),
]


def make(h: int, lengths: list[int], seed: int = 0):
    gen = torch.Generator(device="cuda").manual_seed(seed)
    t = sum(lengths)
    dev = "cuda"
    q = torch.randn(t, h, K, device=dev, generator=gen, dtype=torch.bfloat16)
    k = torch.randn(t, h, K, device=dev, generator=gen, dtype=torch.bfloat16)
    v = torch.randn(t, h, V, device=dev, generator=gen, dtype=torch.bfloat16)
    g = F.logsigmoid(torch.randn(t, h, device=dev, generator=gen, dtype=torch.float32))
    beta = torch.sigmoid(torch.randn(t, h, device=dev, generator=gen, dtype=torch.float32)).to(torch.bfloat16)
    cu = torch.tensor([0] + list(torch.tensor(lengths).cumsum(0)), dtype=torch.int32, device=dev)
    return q, k, v, g, beta, cu


def bench_row(name: str, h: int, kind: str) -> dict:
    lengths = lengths_for(kind)
    q, k, v, g, beta, cu = make(h, lengths)
    leaves = [x.requires_grad_() for x in (q, k, v, g, beta)]
    do = torch.randn(q.shape[0], h, V, device="cuda", dtype=torch.bfloat16)

    def fwd():
        return jagattn.gated_delta_rule(*leaves, cu_seqlens=cu, use_qk_l2norm=True, backend="triton")[0]

    def fwd_bwd():
        o = fwd()
        o.backward(do)

    with torch.no_grad():
        fwd()
    fwd_bwd()  # autotune
    torch.cuda.synchronize()
    t_fwd = triton.testing.do_bench(lambda: torch.no_grad()(fwd)(), warmup=50, rep=300, return_mode="median")
    t_all = triton.testing.do_bench(fwd_bwd, warmup=50, rep=300, grad_to_none=leaves, return_mode="median")
    for x in leaves:
        x.grad = None
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    fwd_bwd()
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated() - base
    finite = all(torch.isfinite(x.grad).all().item() for x in leaves)
    flops = (6 * K * V + 6 * C * K + 4 * C * V) * q.shape[0] * h
    desc = f"{len(lengths)}seqs T={sum(lengths)} [{min(lengths)}..{max(lengths)}]"
    res = {
        "row": name,
        "desc": desc,
        "fwd_ms": t_fwd,
        "fwd_bwd_ms": t_all,
        "bwd_ms": t_all - t_fwd,
        "fwd_mtok_s": q.shape[0] / t_fwd / 1e3,
        "fwd_tflops": flops / t_fwd / 1e9,
        "peak_mem_fwd_bwd_gb": peak / 1e9,
        "grads_finite": finite,
    }
    print(
        f"{name:12s} {desc:32s} fwd {t_fwd:7.3f} ms ({res['fwd_tflops']:5.1f} TFLOP/s, {res['fwd_mtok_s']:6.1f} Mtok/s)"
        f"  bwd {t_all - t_fwd:7.3f} ms  fwd+bwd {t_all:7.3f} ms  peak {peak / 1e9:5.2f} GB  finite={finite}",
        flush=True,
    )
    return res


def breakdown(h: int, kind: str) -> dict:
    """Per-stage times (ms) of the kernels for one row (each launcher timed alone)."""
    lengths = lengths_for(kind)
    q, k, v, g, beta, cu = make(h, lengths)
    qn, kn = l2norm_fwd(q), l2norm_fwd(k)
    do = torch.randn_like(v)
    scale = K**-0.5
    bench = lambda f: triton.testing.do_bench(f, warmup=20, rep=100, return_mode="median")  # noqa: E731
    out = {}
    out["l2norm(q,k)"] = bench(lambda: (l2norm_fwd(q), l2norm_fwd(k)))
    out["prepare"] = bench(lambda: tf._prepare(kn, v, g, beta, cu, store_ainv=False))
    gc, ainv, w, u = tf._prepare(kn, v, g, beta, cu, store_ainv=True)
    out["prepare+ainv"] = bench(lambda: tf._prepare(kn, v, g, beta, cu, store_ainv=True))
    out["state_pass"] = bench(lambda: tf._state_pass(kn, w, u, gc, None, cu, store_final=True))
    out["chunk_fwd(total)"] = bench(lambda: tf.chunk_fwd(qn, kn, v, g, beta, None, cu, scale))
    out["chunk_bwd(total)"] = bench(lambda: tb.chunk_bwd(qn, kn, v, g, beta, None, cu, scale, do, None))
    print(f"breakdown H={h} {kind}: " + ", ".join(f"{k_} {v_:.3f}" for k_, v_ in out.items()), flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=".")
    ap.add_argument("--rows", default="all")
    args = ap.parse_args()
    env = {
        "gpu": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "triton": triton.__version__,
        "time": time.strftime("%Y-%m-%d %H:%M:%S"),
    }
    print(env, flush=True)
    results = []
    for name, h, kind in ROWS:
        if args.rows != "all" and name not in args.rows.split(","):
            continue
        results.append(bench_row(name, h, kind))
    stages = {"H16-8seqs": breakdown(16, "equal:8"), "H16-1seq": breakdown(16, "equal:1")}
    with open(f"{args.out}/gated_delta_bench.json", "w") as f:
        json.dump({"env": env, "rows": results, "stages": stages}, f, indent=1)


if __name__ == "__main__":
    main()
