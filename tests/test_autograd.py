"""Autograd and execution-mode edges of the public ops (found by a session 46 audit; CPU interpreter or cuda).

- a second derivative through the Triton backward raises a clear error (it raised torch's "no autograd formula
  was registered" for an op the user never called); the reference backend computes it;
- ``cu_seqlens`` / ``seq_offsets`` made under ``torch.inference_mode`` work in a training call (they failed with
  "Inference tensors cannot be saved for backward" on Triton, not on the reference);
- ``torch.autocast`` does not change what the ops compute: an fp32 training call, which ``auto`` sends to the
  reference for attention and gated delta, ran its products in bf16 under ``autocast(bfloat16)``.
"""

from __future__ import annotations

import pytest
import torch

import jagattn
from test_compile import _call, _inputs

OPS = ("attention", "hstu", "gated_delta")


def _leaves(op, args, dtype=None):
    """q, k, v (and g, beta for gated delta) as leaves requiring grad; the rest as given."""
    n = 5 if op == "gated_delta" else 3
    out = [a.detach().to(dtype or a.dtype).requires_grad_(True) for a in args[:n]]
    return out, list(args[n:])


@pytest.mark.parametrize("op", OPS)
def test_double_backward_through_triton_is_a_clear_error(op, device):
    args = _inputs(op, [5, 9, 3], 0, device)
    leaves, rest = _leaves(op, args)
    with jagattn.use_backend("triton"):
        out = _call(op)(*leaves, *rest)
    o = out[0] if isinstance(out, tuple) else out
    first = torch.autograd.grad(o.float().square().sum(), leaves[:3], create_graph=True)  # works
    with pytest.raises(RuntimeError, match="double backward .* not supported by the Triton backend"):
        torch.autograd.grad(sum(g.float().square().sum() for g in first), leaves[:3])


@pytest.mark.parametrize("op", OPS)
def test_offsets_made_under_inference_mode_train(op, device):
    args = _inputs(op, [5, 9, 3], 0, device)
    cu_at = 5 if op == "gated_delta" else 3
    with torch.inference_mode():
        cu_inf = args[cu_at].clone()
    assert cu_inf.is_inference()
    grads = []
    for cu in (args[cu_at], cu_inf):
        leaves, rest = _leaves(op, args)
        if op == "gated_delta":
            rest[0] = cu
        else:
            rest = [cu]
        with jagattn.use_backend("triton"):
            out = _call(op)(*leaves, *rest)
        o = out[0] if isinstance(out, tuple) else out
        o.float().sum().backward()
        grads.append([x.grad for x in leaves])
    for a, b in zip(*grads, strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=0)


@pytest.mark.parametrize("op", OPS)
def test_autocast_does_not_change_the_result(op, device):
    # fp32 with gradients: attention runs the reference (auto), gated delta its Triton token loop where Triton runs,
    # HSTU its fp32 Triton kernels;
    # under autocast(bfloat16) each must give the same bits as without it
    args = _inputs(op, [5, 9, 3], 0, device)
    results = []
    for autocast in (False, True):
        leaves, rest = _leaves(op, args, torch.float32)
        with torch.autocast(device, dtype=torch.bfloat16, enabled=autocast):
            out = _call(op)(*leaves, *rest)
        o = out[0] if isinstance(out, tuple) else out
        assert o.dtype == torch.float32
        o.sum().backward()
        results.append([o.detach(), *(x.grad for x in leaves)])
    for a, b in zip(*results, strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=0)
