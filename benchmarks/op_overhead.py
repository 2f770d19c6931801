"""Host-side cost of jagattn's Python layers per call, on tiny inputs where the GPU work is noise.

For each op it times, in microseconds of wall clock per call (mean of N back-to-back calls, one
synchronize at the end, after a warm-up that compiles and autotunes):

- ``public auto``: ``jagattn.<op>(...)`` with ``backend="auto"`` (validation + selection + op);
- ``public triton``: the same with ``backend="triton"`` (selection by name);
- ``backend(inputs)``: the selected backend called on pre-validated inputs (the torch.library op
  and its launcher only);
- ``make_inputs``: validation alone, on the host;
- the peer op where one exists (torch ``varlen_attn``), for scale;

each without and with autograd (inputs requiring grad: the op records its backward node), first with the
ops' eager fast path (``jagattn._core.library.eager_call``, the default) and then through the
``torch.library`` dispatcher (``JAGATTN_EAGER_FAST=0``).

Usage (GPU machine, repo root): ``PYTHONPATH=src python3 benchmarks/op_overhead.py [--json PATH]``
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import torch

import jagattn
from jagattn import testing
from jagattn._core import library
from jagattn._core.dispatch import select
from jagattn._core.varlen import cu_seqlens_from_lengths
from jagattn.attention import api as attention_api
from jagattn.gated_delta import api as gd_api
from jagattn.hstu import api as hstu_api

LENGTHS = [37, 1, 64, 100]


def _per_call_us(fn, n: int) -> float:
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / n * 1e6


def _tensors(grad: bool, shapes, dtype=torch.bfloat16):
    gen = testing.generator(0)
    return [
        testing.randn(s, dtype=dt or dtype, device="cuda", generator=gen, requires_grad=grad)
        for s, dt in shapes
    ]


def cases(grad: bool):
    T, B = sum(LENGTHS), len(LENGTHS)
    cu = cu_seqlens_from_lengths(LENGTHS, device="cuda")
    mx = max(LENGTHS)

    q, k, v = _tensors(grad, [((T, 8, 64), None), ((T, 2, 64), None), ((T, 2, 64), None)])
    kw = dict(causal=True)
    att = attention_api.make_inputs(q, k, v, cu, cu, mx, mx, **kw)
    yield (
        "attention",
        {
            "public auto": lambda: jagattn.attention(q, k, v, cu, cu, mx, mx, **kw),
            "public triton": lambda: jagattn.attention(q, k, v, cu, cu, mx, mx, backend="triton", **kw),
            "backend(inputs)": (lambda b: lambda: b(att))(select("attention", att, "triton")),
            "make_inputs": lambda: attention_api.make_inputs(q, k, v, cu, cu, mx, mx, **kw),
        },
    )
    try:
        from torch.nn.attention.varlen import varlen_attn

        q8, k8, v8 = _tensors(grad, [((T, 8, 64), None)] * 3)
        yield (
            "attention peer",
            {
                "torch varlen_attn": lambda: varlen_attn(q8, k8, v8, cu, cu, mx, mx, window_size=(-1, 0)),
            },
        )
    except ImportError as e:  # pragma: no cover - depends on the torch build
        print(f"torch varlen_attn n/a: {e}", file=sys.stderr)

    hq, hk, hv = _tensors(grad, [((T, 2, 64), None)] * 3)
    nt = torch.tensor([2] * B, dtype=torch.int32, device="cuda")
    hkw = dict(alpha=0.125, num_targets=nt)
    hin = hstu_api.make_inputs(hq, hk, hv, cu, mx, **hkw)
    yield (
        "hstu_attention",
        {
            "public auto": lambda: jagattn.hstu_attention(hq, hk, hv, cu, mx, **hkw),
            "public triton": lambda: jagattn.hstu_attention(hq, hk, hv, cu, mx, backend="triton", **hkw),
            "backend(inputs)": (lambda b: lambda: b(hin))(select("hstu", hin, "triton")),
            "make_inputs": lambda: hstu_api.make_inputs(hq, hk, hv, cu, mx, **hkw),
        },
    )

    gq, gk_, gv, beta = _tensors(grad, [((T, 2, 64), None)] * 3 + [((T, 2), None)])
    (g,) = _tensors(grad, [((T, 2), torch.float32)])
    g = (-(g.detach().abs()) * 0.1).requires_grad_(grad)
    beta = beta.detach().sigmoid().requires_grad_(grad)
    gkw = dict(cu_seqlens=cu, output_final_state=True, use_qk_l2norm=True)
    gin = gd_api.make_inputs(gq, gk_, gv, g, beta, **gkw)
    yield (
        "gated_delta_rule",
        {
            "public auto": lambda: jagattn.gated_delta_rule(gq, gk_, gv, g, beta, **gkw),
            "public triton": lambda: jagattn.gated_delta_rule(gq, gk_, gv, g, beta, backend="triton", **gkw),
            "backend(inputs)": (lambda b: lambda: b(gin))(select("gated_delta", gin, "triton")),
            "make_inputs": lambda: gd_api.make_inputs(gq, gk_, gv, g, beta, **gkw),
        },
    )


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("-n", type=int, default=300, help="calls per measurement")
    args = ap.parse_args(argv)
    rows = []
    for fast in (True, False):
        library.EAGER_FAST = fast  # JAGATTN_EAGER_FAST: the ops' eager fast path, then the dispatcher
        for grad in (False, True):
            ctx = torch.enable_grad() if grad else torch.no_grad()
            with ctx:
                for op, fns in cases(grad):
                    if op.endswith("peer") and not fast:
                        continue  # no jagattn op inside: measured once
                    for layer, fn in fns.items():
                        us = _per_call_us(fn, args.n)
                        rows.append(
                            {
                                "op": op,
                                "layer": layer,
                                "autograd": grad,
                                "eager_fast": fast,
                                "us_per_call": round(us, 1),
                            }
                        )
                        print(
                            f"{op:18s} {layer:18s} autograd={grad!s:5s} fast={fast!s:5s} {us:8.1f} us/call",
                            flush=True,
                        )
    if args.json:
        meta = {
            "gpu": torch.cuda.get_device_name(),
            "torch": torch.__version__,
            "jagattn": jagattn.__version__,
            "lengths": LENGTHS,
            "calls": args.n,
        }
        import triton

        meta["triton"] = triton.__version__
        with open(args.json, "w") as f:
            json.dump({"meta": meta, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
