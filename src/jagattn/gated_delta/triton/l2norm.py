"""Row-wise L2 normalisation of q and k, ``y = x / sqrt(sum x^2 + eps)``, forward and backward.

The forward writes ``y`` in the input dtype (the chunk kernels read it as their q/k), or in fp32 for
the per-key-gate kernels, which compute in fp32 anyway. The backward
recomputes ``y`` in fp32 from ``x``: ``dx = r (dy - y sum(y dy))`` with ``r = 1 / sqrt(sum x^2 + eps)``,
or (``l2norm_bwd_from_y``) takes the forward's stored ``y`` and ``r`` (as FLA does: the forward then keeps
``y`` for the chunk backward instead of ``x``, and nothing is recomputed).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from ..._core.alloc import new_empty
from ..._core.launch import launch as launch_kernel
from .common import block_k

EPS = 1e-6
# Rows per program and warps; ``launch`` keeps about ROW_ELEMS elements per program. H200 (Triton
# 3.6, [32768, 16, 128] bf16, benchmarks/gated_delta_probe.py): 4096 elements with 4 warps reads and
# writes 2.8 TB/s forward (0.097 ms; 2048 elements 0.113 ms), 4.2 TB/s backward (dy fp32), bitwise
# the same result for every tile tried.
ROW_ELEMS = 32 * 128
WARPS = 4


def launch(rows: int, d: int) -> tuple[int, int, int]:
    """``(grid, rows per program, warps)`` for ``rows`` rows of width ``d``."""
    br = max(1, min(128, ROW_ELEMS // block_k(d)))
    return triton.cdiv(rows, br), br, WARPS


@triton.jit
def _gated_delta_fwd_l2norm_kernel(
    X,
    Y,
    RS,
    R,
    EPS: tl.constexpr,
    D: tl.constexpr,
    BR: tl.constexpr,
    BD: tl.constexpr,
    STORE_Y: tl.constexpr,
    STORE_RSTD: tl.constexpr,
):
    """``Y = X * RS`` with ``RS = 1 / sqrt(sum X^2 + eps)`` per row; stores Y and/or RS (fp32)."""
    rows = (tl.program_id(0) * BR + tl.arange(0, BR)).to(tl.int64)
    o_d = tl.arange(0, BD)
    m = (rows < R)[:, None] & (o_d < D)[None, :]
    p = rows[:, None] * D + o_d[None, :]
    x = tl.load(X + p, mask=m, other=0.0).to(tl.float32)
    r = 1.0 / tl.sqrt(tl.sum(x * x, 1) + EPS)
    if STORE_Y:
        tl.store(Y + p, (x * r[:, None]).to(Y.dtype.element_ty), mask=m)
    if STORE_RSTD:
        tl.store(RS + rows, r, mask=rows < R)


@triton.jit
def _gated_delta_bwd_l2norm_kernel(
    X,
    DY,
    DX,
    RS,
    R,
    EPS: tl.constexpr,
    D: tl.constexpr,
    BR: tl.constexpr,
    BD: tl.constexpr,
    FROM_Y: tl.constexpr,
):
    """``DX = r (DY - y sum(y DY))`` per row; ``FROM_Y``: X holds the forward's ``y`` and RS its ``r``."""
    rows = (tl.program_id(0) * BR + tl.arange(0, BR)).to(tl.int64)
    o_d = tl.arange(0, BD)
    m = (rows < R)[:, None] & (o_d < D)[None, :]
    p = rows[:, None] * D + o_d[None, :]
    x = tl.load(X + p, mask=m, other=0.0).to(tl.float32)
    dy = tl.load(DY + p, mask=m, other=0.0).to(tl.float32)
    if FROM_Y:
        y = x
        r = tl.load(RS + rows, mask=rows < R, other=0.0)
    else:
        r = 1.0 / tl.sqrt(tl.sum(x * x, 1) + EPS)
        y = x * r[:, None]
    dx = r[:, None] * (dy - y * tl.sum(y * dy, 1)[:, None])
    tl.store(DX + p, dx.to(DX.dtype.element_ty), mask=m)


def _launch_fwd(x: torch.Tensor, y: torch.Tensor | None, rs: torch.Tensor | None) -> None:
    """The forward kernel over the rows of ``x``, storing ``y`` and/or ``rs`` (whichever is given)."""
    d = x.shape[-1]
    rows = x.numel() // d if d else 0
    if rows > 0:
        grid, br, warps = launch(rows, d)
        launch_kernel(_gated_delta_fwd_l2norm_kernel, (grid,),
            x, x if y is None else y, x if rs is None else rs, rows, EPS=EPS, D=d, BR=br, BD=block_k(d),
            STORE_Y=y is not None, STORE_RSTD=rs is not None, num_warps=warps,
        )  # fmt: skip


def _launch_bwd(x: torch.Tensor, dy: torch.Tensor, rs: torch.Tensor | None) -> torch.Tensor:
    """The backward kernel: ``x`` the input (``rs`` None) or the forward's ``y`` with its factors ``rs``."""
    d = x.shape[-1]
    rows = x.numel() // d if d else 0
    dx = new_empty(x.shape, dtype=x.dtype, device=x.device)
    if rows > 0:
        grid, br, warps = launch(rows, d)
        launch_kernel(_gated_delta_bwd_l2norm_kernel, (grid,),
            x, dy, dx, x if rs is None else rs, rows, EPS=EPS, D=d, BR=br, BD=block_k(d),
            FROM_Y=rs is not None, num_warps=warps,
        )  # fmt: skip
    return dx


def l2norm_fwd(x: torch.Tensor, out_dtype: torch.dtype | None = None) -> torch.Tensor:
    """``[..., D]`` contiguous -> normalised rows in ``out_dtype`` (default: x's dtype)."""
    y = new_empty(x.shape, dtype=out_dtype or x.dtype, device=x.device)
    _launch_fwd(x, y, None)
    return y


def l2norm_fwd_rstd(
    x: torch.Tensor, out_dtype: torch.dtype | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(l2norm_fwd(x, out_dtype), l2norm_rstd(x))`` from one kernel (bitwise those two)."""
    y = new_empty(x.shape, dtype=out_dtype or x.dtype, device=x.device)
    rs = new_empty(x.shape[:-1], dtype=torch.float32, device=x.device)
    _launch_fwd(x, y, rs)
    return y, rs


def l2norm_rstd(x: torch.Tensor) -> torch.Tensor:
    """``1 / sqrt(sum x^2 + eps)`` per row of a contiguous ``[..., D]`` x, fp32 of shape ``x.shape[:-1]``:
    the factors ``l2norm_fwd`` multiplies by (same kernel, same launch: bitwise equal), for kernels
    that normalise their q/k tiles on load (``common._l2n``) instead of reading a normalised copy.
    One read of x (half the traffic of ``l2norm_fwd``) and no ``[..., D]`` buffer."""
    rs = new_empty(x.shape[:-1], dtype=torch.float32, device=x.device)
    _launch_fwd(x, None, rs)
    return rs


def l2norm_bwd(x: torch.Tensor, dy: torch.Tensor) -> torch.Tensor:
    """Gradient of :func:`l2norm_fwd` w.r.t. ``x`` (in x's dtype) given ``dy`` (any float dtype)."""
    return _launch_bwd(x, dy, None)


def l2norm_bwd_from_y(y: torch.Tensor, rs: torch.Tensor, dy: torch.Tensor) -> torch.Tensor:
    """Gradient of :func:`l2norm_fwd` w.r.t. its input, in y's dtype, from the forward's output ``y`` and
    factors ``rs`` (:func:`l2norm_fwd_rstd`): no recomputation of the norm, and x need not be kept."""
    return _launch_bwd(y, dy, rs)
