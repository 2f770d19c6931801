"""``torch.export`` of every public op through its Triton backend (GPU only: under the Triton
interpreter ``wrap_triton`` returns the raw kernel, which export cannot trace).

Each test exports a module whose token and batch dimensions are dynamic, checks that the graph
keeps jagattn's custom op (opaque, not traced into), then runs the exported program on a
*different* jagged batch (other lengths, other batch size) and on a save/load round trip and
compares with eager bit for bit (same kernels, same launch parameters)."""

from __future__ import annotations

import io

import pytest
import torch

import jagattn
from jagattn.testing import cu_seqlens, generator, randn, random_lengths

pytestmark = pytest.mark.gpu

DEV = "cuda"
BF16 = torch.bfloat16


def _jagattn_ops(ep: torch.export.ExportedProgram) -> set[str]:
    return {
        str(n.target)
        for n in ep.graph.nodes
        if n.op == "call_function" and str(n.target).startswith("jagattn.")
    }


def _roundtrip(ep: torch.export.ExportedProgram) -> torch.export.ExportedProgram:
    buf = io.BytesIO()
    torch.export.save(ep, buf)
    buf.seek(0)
    return torch.export.load(buf)


def _check(ep, eager_fn, batches):
    loaded = _roundtrip(ep)
    for args in batches:
        want = eager_fn(*args)
        want = want if isinstance(want, tuple) else (want,)
        for prog in (ep, loaded):
            got = prog.module()(*args)
            got = got if isinstance(got, tuple) else (got,)
            assert len(got) == len(want)
            for i, (x, y) in enumerate(zip(got, want, strict=True)):
                torch.testing.assert_close(x, y, rtol=0, atol=0, msg=f"output {i}")


def _dims():
    t = torch.export.Dim("T", min=2, max=1 << 20)
    b1 = torch.export.Dim("B1", min=2, max=1 << 14)
    return t, b1


class _Attention(torch.nn.Module):
    def forward(self, q, k, v, cu):
        return jagattn.attention(
            q, k, v, cu, cu, 1024, 1024, causal=True, window=(300, 0), return_lse=True, backend="triton"
        )


class _Hstu(torch.nn.Module):
    def forward(self, q, k, v, cu, nt):
        return jagattn.hstu_attention(
            q, k, v, cu, 1024, alpha=0.125, num_targets=nt, contextual_seq_len=3, max_attn_len=200,
            backend="triton",
        )  # fmt: skip


class _HstuCached(torch.nn.Module):
    def forward(self, dq, k, v, cu, nt):
        return jagattn.hstu_attention_cached(
            dq, k, v, cu, 1024, alpha=0.125, num_targets=nt, backend="triton"
        )


class _GatedDelta(torch.nn.Module):
    def forward(self, q, k, v, g, beta, cu, h0):
        return jagattn.gated_delta_rule(
            q, k, v, g, beta, cu_seqlens=cu, initial_state=h0, output_final_state=True,
            use_qk_l2norm=True, backend="triton",
        )  # fmt: skip


def _attention_args(lengths, seed):
    gen = generator(seed)
    t = sum(lengths)
    q = randn((t, 8, 64), generator=gen, dtype=BF16, device=DEV)
    k = randn((t, 2, 64), generator=gen, dtype=BF16, device=DEV)
    v = randn((t, 2, 64), generator=gen, dtype=BF16, device=DEV)
    return q, k, v, cu_seqlens(lengths, DEV)


def test_export_attention():
    t, b1 = _dims()
    args = _attention_args([300, 1, 1000, 77], 0)
    ep = torch.export.export(
        _Attention(), args, dynamic_shapes=({0: t}, {0: t}, {0: t}, {0: b1}), strict=False
    )
    assert "jagattn.attention_fwd.default" in _jagattn_ops(ep), _jagattn_ops(ep)
    assert _jagattn_ops(ep.run_decompositions({})) == _jagattn_ops(ep)
    other = _attention_args(random_lengths("uniform", batch=9, max_len=400, seed=1), 1)
    _check(ep, _Attention(), [args, other])


def _hstu_args(lengths, seed, with_targets=True):
    gen = generator(seed)
    t = sum(lengths)
    q = randn((t, 2, 64), generator=gen, dtype=BF16, device=DEV)
    k = randn((t, 2, 64), generator=gen, dtype=BF16, device=DEV)
    v = randn((t, 2, 32), generator=gen, dtype=BF16, device=DEV)
    nt = torch.tensor([min(n, 5) for n in lengths], dtype=torch.int32, device=DEV)
    return q, k, v, cu_seqlens(lengths, DEV), nt


def test_export_hstu():
    t, b1 = _dims()
    b = torch.export.Dim("B", min=1, max=(1 << 14) - 1)
    args = _hstu_args([300, 1, 1000, 77], 2)
    ep = torch.export.export(
        _Hstu(), args, dynamic_shapes=({0: t}, {0: t}, {0: t}, {0: b + 1}, {0: b}), strict=False
    )
    assert any(op.startswith("jagattn.hstu_fwd") for op in _jagattn_ops(ep)), _jagattn_ops(ep)
    other = _hstu_args(random_lengths("uniform", batch=7, max_len=500, seed=3), 3)
    _check(ep, _Hstu(), [args, other])


def test_export_hstu_cached():
    delta = 4
    b = torch.export.Dim("B", min=1, max=(1 << 14) - 1)
    t = torch.export.Dim("T", min=2, max=1 << 20)
    bd = torch.export.Dim("BD", min=1, max=1 << 16)

    def make(lengths, seed):
        q, k, v, cu, nt = _hstu_args(lengths, seed)
        ends = cu[1:].long()
        rows = (ends[:, None] - delta + torch.arange(delta, device=DEV)).reshape(-1)
        return q[rows].contiguous(), k, v, cu, nt

    args = make([300, 9, 1000, 77], 4)
    ep = torch.export.export(
        _HstuCached(), args, dynamic_shapes=({0: bd}, {0: t}, {0: t}, {0: b + 1}, {0: b}), strict=False
    )
    assert any(op.startswith("jagattn.hstu_cached") for op in _jagattn_ops(ep)), _jagattn_ops(ep)
    other = make([max(n, delta) for n in random_lengths("uniform", batch=6, max_len=300, seed=5)], 5)
    with torch.no_grad():
        _check(ep, _HstuCached(), [args, other])


def _gd_args(lengths, seed):
    gen = generator(seed)
    t, b = sum(lengths), len(lengths)
    q = randn((t, 2, 64), generator=gen, dtype=BF16, device=DEV)
    k = randn((t, 2, 64), generator=gen, dtype=BF16, device=DEV)
    v = randn((t, 4, 64), generator=gen, dtype=BF16, device=DEV)
    g = (-torch.rand(t, 4, generator=gen) * 0.1).to(DEV, torch.float32)
    beta = torch.rand(t, 4, generator=gen).to(DEV, BF16)
    h0 = randn((b, 4, 64, 64), generator=gen, device=DEV)
    return q, k, v, g, beta, cu_seqlens(lengths, DEV), h0


def test_export_gated_delta():
    t, b1 = _dims()
    b = b1 - 1
    args = _gd_args([300, 1, 65, 130], 6)
    dyn = ({0: t}, {0: t}, {0: t}, {0: t}, {0: t}, {0: b1}, {0: b})
    ep = torch.export.export(_GatedDelta(), args, dynamic_shapes=dyn, strict=False)
    assert any(op.startswith("jagattn.gated_delta") for op in _jagattn_ops(ep)), _jagattn_ops(ep)
    other = _gd_args(random_lengths("uniform", batch=5, max_len=200, seed=7), 7)
    _check(ep, _GatedDelta(), [args, other])
