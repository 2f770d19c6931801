"""The public ops under ``torch.compile(fullgraph=True)`` and strict ``torch.export`` with the default
``backend="auto"`` and dynamic token counts (CPU: Triton's interpreter; on a GPU the same tests run on cuda).

Until session 46 every one of these failed: dynamo could not trace the dispatcher's ``ContextVar.get`` (every
``auto`` call), a peer's import in the availability check, ``max(..., default=)`` over symbolic sizes in the
fp32 route's test, and ``str()`` of a symbolic size in gated delta's validation; and under strict export with a
dynamic token dim the fp32 route's and the token-loop choice's size tests became guards that export rejects.
The GPU tests of the ops' own compile / export (``test_*_triton.py``, ``test_export.py``) name
``backend="triton"`` and export non-strict, which is why none of them saw it.
"""

from __future__ import annotations

import pytest
import torch

import jagattn
from jagattn._core import dispatch, precision
from jagattn.testing import cu_seqlens, generator, rand, randn

F16 = torch.float16
OPS = ("attention", "hstu", "hstu_cached", "gated_delta")
MAX_LEN = 40


def _inputs(op: str, lengths, seed: int, device: str):
    gen = generator(seed)
    t, b = sum(lengths), len(lengths)
    cu = cu_seqlens(lengths, device)
    if op == "attention":
        q = randn((t, 4, 16), generator=gen, dtype=F16, device=device)
        k = randn((t, 2, 16), generator=gen, dtype=F16, device=device)
        v = randn((t, 2, 16), generator=gen, dtype=F16, device=device)
        return q, k, v, cu
    if op in ("hstu", "hstu_cached"):
        q = randn((t, 2, 16), generator=gen, dtype=F16, device=device) * 0.5
        k = randn((t, 2, 16), generator=gen, dtype=F16, device=device) * 0.5
        v = randn((t, 2, 16), generator=gen, dtype=F16, device=device)
        if op == "hstu_cached":  # the last 2 rows of every sequence
            rows = (cu[1:].long()[:, None] - 2 + torch.arange(2, device=device)).reshape(-1)
            q = q[rows].contiguous()
        return q, k, v, cu
    q = randn((t, 2, 16), generator=gen, dtype=F16, device=device)
    k = torch.nn.functional.normalize(randn((t, 2, 16), generator=gen, device=device), dim=-1).to(F16)
    v = randn((t, 4, 16), generator=gen, dtype=F16, device=device)
    g = -rand((t, 4), generator=gen, device=device) * 0.5
    beta = rand((t, 4), generator=gen, device=device)
    h0 = randn((b, 4, 16, 16), generator=gen, device=device)
    return q, k, v, g, beta, cu, h0


def _call(op: str):
    if op == "attention":
        return lambda q, k, v, cu: jagattn.attention(q, k, v, cu, max_seqlen_q=MAX_LEN, causal=True)
    if op == "hstu":
        return lambda q, k, v, cu: jagattn.hstu_attention(
            q, k, v, cu, MAX_LEN, alpha=0.25, contextual_seq_len=1
        )
    if op == "hstu_cached":
        return lambda dq, k, v, cu: jagattn.hstu_attention_cached(dq, k, v, cu, MAX_LEN, alpha=0.25)
    return lambda q, k, v, g, beta, cu, h0: jagattn.gated_delta_rule(
        q, k, v, g, beta, cu_seqlens=cu, initial_state=h0, output_final_state=True, use_qk_l2norm=True
    )


def _flat(out):
    return out if isinstance(out, tuple) else (out,)


@pytest.mark.parametrize("op", OPS)
def test_compile_fullgraph_auto_dynamic(op, device, monkeypatch):
    # the default backend through dynamo with dynamic shapes, the fp32 route's size test on: two batches of other
    # token counts (the second past the route's limit of 1024 token-heads for attention: a recompile, not an
    # error); each call equals eager bit for bit (same backend, same route, same kernels)
    monkeypatch.setattr(precision, "SMALL_FP32", "auto")
    fn = _call(op)
    compiled = torch.compile(fn, fullgraph=True, dynamic=True, backend="eager")
    for lengths, seed in (([5, 9, 3], 0), ([12, 2, 30, 7], 1), ([40, 40, 40, 40, 40, 40], 2)):
        args = _inputs(op, lengths, seed, device)
        with torch.no_grad():
            got, want = _flat(compiled(*args)), _flat(fn(*args))
        for x, y in zip(got, want, strict=True):
            torch.testing.assert_close(x, y, rtol=0, atol=0)
    torch._dynamo.reset()


def test_compile_keeps_the_use_backend_choice_it_was_traced_with(device):
    # under torch.compile the dispatcher's lookup is a constant of the traced graph (documented in
    # dispatch._default_for): a block active while tracing picks the backend; eager calls re-resolve
    seen = []
    ref = dispatch._BY_NAME["attention"]["reference"]
    real = type(ref).__call__

    def spy(self, inputs):
        seen.append(self.name)
        return real(self, inputs)

    fn = _call("attention")
    args = _inputs("attention", [5, 9, 3], 0, device)
    try:
        type(ref).__call__ = spy
        with jagattn.use_backend(attention="reference"), torch.no_grad():
            # (the reference loops over cu_seqlens' values: dynamo breaks the graph there, hence no fullgraph)
            got = torch.compile(fn, backend="eager")(*args)
    finally:
        type(ref).__call__ = real
        torch._dynamo.reset()
    assert seen and set(seen) == {"reference"}
    with jagattn.use_backend(attention="reference"), torch.no_grad():
        torch.testing.assert_close(got, fn(*args), rtol=0, atol=0)


class _Module(torch.nn.Module):
    def __init__(self, op):
        super().__init__()
        self.fn = _call(op)

    def forward(self, *args):
        return self.fn(*args)


@pytest.mark.parametrize("op", OPS)
def test_strict_export_dynamic_tokens_auto(op, device, monkeypatch):
    # strict export (dynamo) with a dynamic token dim: no size test of a speed or precision choice may become a
    # guard on it (the fp32 route and gated delta's token-loop choice are off in exported programs); the program
    # then runs a batch of another token count. HSTU bounds T by batch x max_seq_len (a validation), so its dim
    # carries that bound; the cached op's delta rows stay static
    monkeypatch.setattr(precision, "SMALL_FP32", "auto")
    args = _inputs(op, [5, 9, 3], 0, device)
    other = _inputs(op, [12, 2, 30], 1, device)
    t = torch.export.Dim("T", min=2, max=3 * MAX_LEN if op.startswith("hstu") else 1 << 16)
    if op == "gated_delta":
        dyn = ({0: t},) * 5 + (None, None)
    elif op == "hstu_cached":
        dyn = (None, {0: t}, {0: t}, None)
    else:
        dyn = ({0: t}, {0: t}, {0: t}, None)
    with torch.no_grad():
        ep = torch.export.export(_Module(op), args, dynamic_shapes=(dyn,), strict=True)  # forward(*args)
        ops = {str(n.target) for n in ep.graph.nodes if str(n.target).startswith("jagattn.")}
        assert ops, ep.graph
        for a in (args, other):
            got, want = _flat(ep.module()(*a)), _flat(_call(op)(*a))
            for x, y in zip(got, want, strict=True):
                # eager takes the fp32 route on these tiny batches (and gated delta's token loop) where the
                # exported program runs the half-precision (chunked) kernels: ulps apart
                torch.testing.assert_close(x, y, rtol=4e-3, atol=4e-3)


class _Fn(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x)


def test_exporting_is_false_under_compile_and_true_under_export(monkeypatch):
    # precision.exporting() switches the fp32 route and gated delta's token-loop choice off in exported programs
    # only. torch < 2.13's dynamo folds torch.compiler.is_exporting() to True under every torch.compile (session
    # 47: on the device's torch 2.11 every compiled call skipped both choices and differed from eager); patching
    # is_exporting to answer True shows the same here on any torch
    def f(x):
        return x + 1 if precision.exporting() else x - 1

    x = torch.zeros(2)
    assert not precision.exporting()
    monkeypatch.setattr(torch.compiler, "is_exporting", lambda: True)
    assert torch.compile(f, fullgraph=True, backend="eager")(x).tolist() == [-1, -1]
    torch._dynamo.reset()
    monkeypatch.undo()
    for strict in (True, False):
        ep = torch.export.export(_Fn(f), (x,), strict=strict)
        assert ep.module()(x).tolist() == [1, 1], strict
