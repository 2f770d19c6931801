"""Row-wise L2 normalisation of q and k, ``y = x / sqrt(sum x^2 + eps)``, forward and backward.

The forward writes ``y`` in the input dtype (the chunk kernels read it as their q/k). The backward
recomputes ``y`` in fp32 from ``x``: ``dx = r (dy - y sum(y dy))`` with ``r = 1 / sqrt(sum x^2 + eps)``.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from ..._core.alloc import new_empty
from .common import block_k

EPS = 1e-6
BLOCK_R = 16


@triton.jit
def _gated_delta_fwd_l2norm_kernel(X, Y, R, eps, D: tl.constexpr, BR: tl.constexpr, BD: tl.constexpr):
    rows = (tl.program_id(0) * BR + tl.arange(0, BR)).to(tl.int64)
    o_d = tl.arange(0, BD)
    m = (rows < R)[:, None] & (o_d < D)[None, :]
    p = rows[:, None] * D + o_d[None, :]
    x = tl.load(X + p, mask=m, other=0.0).to(tl.float32)
    r = 1.0 / tl.sqrt(tl.sum(x * x, 1) + eps)
    tl.store(Y + p, (x * r[:, None]).to(Y.dtype.element_ty), mask=m)


@triton.jit
def _gated_delta_bwd_l2norm_kernel(X, DY, DX, R, eps, D: tl.constexpr, BR: tl.constexpr, BD: tl.constexpr):
    rows = (tl.program_id(0) * BR + tl.arange(0, BR)).to(tl.int64)
    o_d = tl.arange(0, BD)
    m = (rows < R)[:, None] & (o_d < D)[None, :]
    p = rows[:, None] * D + o_d[None, :]
    x = tl.load(X + p, mask=m, other=0.0).to(tl.float32)
    dy = tl.load(DY + p, mask=m, other=0.0).to(tl.float32)
    r = 1.0 / tl.sqrt(tl.sum(x * x, 1) + eps)
    y = x * r[:, None]
    dx = r[:, None] * (dy - y * tl.sum(y * dy, 1)[:, None])
    tl.store(DX + p, dx.to(DX.dtype.element_ty), mask=m)


def l2norm_fwd(x: torch.Tensor) -> torch.Tensor:
    """``[..., D]`` contiguous -> normalised rows, same dtype."""
    d = x.shape[-1]
    rows = x.numel() // d if d else 0
    y = new_empty(x.shape, dtype=x.dtype, device=x.device)
    if rows > 0:
        torch.library.wrap_triton(_gated_delta_fwd_l2norm_kernel)[(triton.cdiv(rows, BLOCK_R),)](
            x, y, rows, EPS, D=d, BR=BLOCK_R, BD=block_k(d)
        )
    return y


def l2norm_bwd(x: torch.Tensor, dy: torch.Tensor) -> torch.Tensor:
    """Gradient of :func:`l2norm_fwd` w.r.t. ``x`` (in x's dtype) given ``dy`` (any float dtype)."""
    d = x.shape[-1]
    rows = x.numel() // d if d else 0
    dx = new_empty(x.shape, dtype=x.dtype, device=x.device)
    if rows > 0:
        torch.library.wrap_triton(_gated_delta_bwd_l2norm_kernel)[(triton.cdiv(rows, BLOCK_R),)](
            x, dy, dx, rows, EPS, D=d, BR=BLOCK_R, BD=block_k(d)
        )
    return dx
