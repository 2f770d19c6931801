"""Host time per public call with the Triton kernels stubbed, on a CPU machine: what jagattn's Python layers
(validation, selection, op dispatch or the eager fast path, launchers, Triton's autotuner) cost, without
a GPU. Triton's CPU interpreter is told to return at once, so no kernel runs and the outputs are garbage;
only the times mean something. Each op is timed through the ``torch.library`` dispatcher
(``JAGATTN_EAGER_FAST=0``) and through the eager fast path (the default), without and with an input that
requires grad (the forward only: no backward is run). Best of 3 rounds of N calls.

Session 7 on the CI-like host (2 cores, torch 2.13 CPU, Triton 3.9), us per call, dispatcher -> fast:
hstu 121 -> 84, with grad 201 -> 139; attention 170 -> 119, with grad 240 -> 170; gated delta 181 -> 142.
On a GPU machine ``benchmarks/op_overhead.py`` measures the real thing (kernel launches included).

``python benchmarks/host_overhead_cpu.py [-n 2000]``
"""

from __future__ import annotations

import argparse
import os
import time

os.environ["TRITON_INTERPRET"] = "1"  # before triton is imported

import torch  # noqa: E402
import triton.runtime.interpreter as interpreter  # noqa: E402

import jagattn  # noqa: E402
from jagattn._core import library  # noqa: E402


def _best_us(fn, n: int) -> float:
    for _ in range(20):
        fn()
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        best = min(best, (time.perf_counter() - t0) / n * 1e6)
    return best


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=2000)
    args = ap.parse_args()
    interpreter.InterpretedFunction.run = lambda self, *a, **k: None  # kernels do nothing
    lengths = [37, 1, 64, 100]
    cu = torch.tensor([0, *torch.tensor(lengths).cumsum(0).tolist()], dtype=torch.int64)
    t = sum(lengths)
    gen = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(t, 2, 32, generator=gen, dtype=torch.float16) for _ in range(3))
    qg = q.clone().requires_grad_()
    g = torch.nn.functional.logsigmoid(torch.randn(t, 2, generator=gen))
    beta = torch.rand(t, 2, generator=gen)
    att = dict(max_seqlen_q=100, max_seqlen_k=100, causal=True, backend="triton")
    calls = {
        "hstu": lambda: jagattn.hstu_attention(q, k, v, cu, max_seq_len=100, alpha=0.25, backend="triton"),
        "hstu grad": lambda: jagattn.hstu_attention(
            qg, k, v, cu, max_seq_len=100, alpha=0.25, backend="triton"
        ),
        "attention": lambda: jagattn.attention(q, k, v, cu, cu, **att),
        "attention grad": lambda: jagattn.attention(qg, k, v, cu, cu, **att),
        "gated_delta": lambda: jagattn.gated_delta_rule(q, k, v, g, beta, cu_seqlens=cu, backend="triton"),
    }
    for name, fn in calls.items():
        times = []
        for fast in (False, True):
            library.EAGER_FAST = fast
            times.append(_best_us(fn, args.n if "gated" not in name else max(1, args.n // 5)))
        print(f"{name:16s} dispatcher {times[0]:7.1f} us   fast {times[1]:7.1f} us", flush=True)


if __name__ == "__main__":
    main()
