"""What the fp32 route of tiny batches (``jagattn/_core/precision.py``) costs: wall time per call
(forward, and forward + backward) of each op on bf16 inputs with the route on its default (``auto``)
and off, same process, alternated, at a tiny size and at the route's limit.

    PYTHONPATH=src python3 benchmarks/fp32_route_cost.py [--iters 200]
"""

from __future__ import annotations

import argparse
import time

import torch
import torch.nn.functional as F

import jagattn
from jagattn import testing
from jagattn._core import precision


def _attention(lengths, h, d):
    gen = testing.generator(0)
    t, m = sum(lengths), max(lengths)
    q, k, v = (testing.randn([t, h, d], dtype=torch.bfloat16, device="cuda", generator=gen) for _ in "qkv")
    cu = testing.cu_seqlens(lengths, "cuda")
    return (q, k, v), lambda q, k, v: jagattn.attention(q, k, v, cu, cu, m, m, causal=True)


def _hstu(lengths, h, d):
    gen = testing.generator(1)
    t, m = sum(lengths), max(lengths)
    q, k, v = (testing.randn([t, h, d], dtype=torch.bfloat16, device="cuda", generator=gen) for _ in "qkv")
    cu = testing.cu_seqlens(lengths, "cuda")
    return (q, k, v), lambda q, k, v: jagattn.hstu_attention(q, k, v, cu, m, alpha=1.0 / d)


def _gated_delta(lengths, h, d):
    gen = testing.generator(2)
    t = sum(lengths)
    q, k, v = (testing.randn([t, h, d], dtype=torch.bfloat16, device="cuda", generator=gen) for _ in "qkv")
    g = F.logsigmoid(testing.randn([t, h], device="cuda", generator=gen) + 1.0)
    beta = torch.sigmoid(testing.randn([t, h], device="cuda", generator=gen))
    cu = testing.cu_seqlens(lengths, "cuda")
    return (q, k, v), lambda q, k, v: jagattn.gated_delta_rule(
        q, k, v, g, beta, cu_seqlens=cu, use_qk_l2norm=True
    )[0]


ROWS = [
    ("attention", _attention, [3, 2, 1], 4, 128),
    ("attention", _attention, [64] * 4, 4, 128),  # Tq x Hq = 1024, the limit
    ("hstu", _hstu, [3, 2, 1], 2, 128),
    ("hstu", _hstu, [128] * 4, 2, 128),  # 1024
    ("gated_delta", _gated_delta, [3, 2, 1], 2, 128),
    ("gated_delta", _gated_delta, [256] * 2, 2, 128),  # T x HV = 1024, the limit
]


def _limits() -> dict:
    import importlib

    mods = {n: importlib.import_module(f"jagattn.{n}.backends") for n in ("attention", "hstu", "gated_delta")}
    return {
        "attention": mods["attention"].SMALL_FP32_MAX_ROWS,
        "hstu": mods["hstu"].SMALL_FP32_MAX_ROWS,
        "gated_delta": mods["gated_delta"].SMALL_FP32_MAX_TOKEN_HEADS,
    }


_LIMITS = _limits()


def _time(fn, inputs, grad: bool, iters: int) -> float:
    leaves = [x.detach().requires_grad_(grad) for x in inputs]
    for _ in range(3):
        out = fn(*leaves)
        if grad:
            out.float().sum().backward()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(iters):
        out = fn(*leaves)
        if grad:
            out.float().sum().backward()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / iters * 1e6


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=200)
    args = ap.parse_args()
    print(f"{'op':12} {'lengths':22} {'H':>2} {'D':>4} | fwd us auto / off | fwd+bwd us auto / off | routed")
    for name, make, lengths, h, d in ROWS:
        inputs, fn = make(lengths, h, d)
        res = {}
        for _rep in range(2):  # alternated
            for mode in ("auto", "off"):
                precision.SMALL_FP32 = mode
                for grad in (False, True):
                    res.setdefault((mode, grad), []).append(_time(fn, inputs, grad, args.iters))
        precision.SMALL_FP32 = "auto"
        routed = precision.fp32_route(torch.bfloat16, (sum(lengths) * h,), _LIMITS[name])
        best = {key: min(v) for key, v in res.items()}
        lens = str(lengths) if len(lengths) < 4 else f"{len(lengths)}x{lengths[0]}"
        print(
            f"{name:12} {lens:22} {h:>2} {d:>4} | {best['auto', False]:8.1f} / {best['off', False]:8.1f} |"
            f" {best['auto', True]:8.1f} / {best['off', True]:8.1f} | {routed}",
            flush=True,
        )


if __name__ == "__main__":
    main()
