"""The HSTU mask of SPEC.md section 2 inside Triton kernels, and the block bounds derived from it.

Positions ``p`` of one sequence map to ids: ``max(p - C + 1, 0)`` with context (``C > 0``), then
``min(id, M)`` with targets, where ``U = n - T`` and ``M = U - C + 1`` (``U`` without context).
Ids never decrease with ``p``, which gives the bounds below:

- ``_first_pos_id_ge(x)``: smallest position whose id is ``>= x`` (for ``x <= M``).
- ``_last_pos_id_le(x)``: largest position whose id is ``<= x`` (``x >= 0``), clamped to ``n - 1``.

A sequence with ``M <= 0`` (fewer than ``C`` non-target tokens) sees only its diagonal; the
kernels then treat every block as a boundary block.

``_silu_a`` and ``_silu_a_ds`` are the pointwise helpers shared by the kernels (see their docstrings).
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def _ids(p, C, M, HAS_CTX: tl.constexpr, HAS_TARGETS: tl.constexpr):
    if HAS_CTX:
        p = tl.maximum(p - C + 1, 0)
    if HAS_TARGETS:
        p = tl.minimum(p, M)
    return p


@triton.jit
def _visible(
    pi,
    pj,
    C,
    W,
    F,
    M,
    HAS_CTX: tl.constexpr,
    HAS_TARGETS: tl.constexpr,
    HAS_WINDOW: tl.constexpr,
    HAS_FULL: tl.constexpr,
    CTX_ROWS_OUT: tl.constexpr = False,
):
    """``m_ij`` for broadcastable query positions ``pi`` and key positions ``pj`` (keys < n assumed).
    ``CTX_ROWS_OUT``: the caller guarantees no row is contextual (``id_i != 0``), so the contextual term is left out."""
    id_i = _ids(pi, C, M, HAS_CTX, HAS_TARGETS)
    id_j = _ids(pj, C, M, HAS_CTX, HAS_TARGETS)
    d = id_i - id_j
    m = (pi == pj) | (d > 0)
    if HAS_WINDOW:
        if HAS_FULL:
            m = m & ((d <= W) | (id_i >= M - F))
        else:
            m = m & (d <= W)
    if HAS_CTX and not CTX_ROWS_OUT:
        m = m | ((id_i == 0) & (id_j < M))
    return m


@triton.jit
def _zero_hidden(
    x,
    pi,
    pj,
    C,
    W,
    F,
    M,
    HAS_CTX: tl.constexpr,
    HAS_TARGETS: tl.constexpr,
    HAS_WINDOW: tl.constexpr,
    HAS_FULL: tl.constexpr,
):
    """``x`` with 0 where ``m_ij`` is false. Keys (rows) outside the walked range need no term here: they
    load as zeros and add nothing (session 19)."""
    vis = _visible(pi, pj, C, W, F, M, HAS_CTX, HAS_TARGETS, HAS_WINDOW, HAS_FULL)
    return tl.where(vis, x, 0.0)


@triton.jit
def _zero_hidden_pair(
    b_a,
    b_ds,
    o_i,
    o_j,
    C,
    W,
    F,
    M,
    HAS_CTX: tl.constexpr,
    HAS_TARGETS: tl.constexpr,
    HAS_WINDOW: tl.constexpr,
    HAS_FULL: tl.constexpr,
    CTX_ROWS_OUT: tl.constexpr = False,
):
    """``b_a, b_ds`` ([BN keys, BM rows]) with 0 where a row cannot see a key. Rows outside the walked range
    need no term here: their q and dO load as zeros, so they add nothing to dK / dV (session 19: the term
    cost one predicate operation per score of every edge block)."""
    vis = _visible(
        o_i[None, :], o_j[:, None], C, W, F, M, HAS_CTX, HAS_TARGETS, HAS_WINDOW, HAS_FULL, CTX_ROWS_OUT
    )
    return tl.where(vis, b_a, 0.0), tl.where(vis, b_ds, 0.0)


@triton.jit
def _first_pos_id_ge(x, C, HAS_CTX: tl.constexpr):
    if HAS_CTX:
        r = tl.where(x <= 0, 0, x + C - 1)
    else:
        r = tl.maximum(x, 0)
    return r


@triton.jit
def _last_pos_id_le(x, n, C, M, HAS_CTX: tl.constexpr, HAS_TARGETS: tl.constexpr):
    if HAS_CTX:
        r = x + C - 1
    else:
        r = x
    if HAS_TARGETS:
        r = tl.where(x >= M, n - 1, r)
    return tl.minimum(r, n - 1)


@triton.jit
def _phases(lo, hi, full_lo, full_hi, BLOCK: tl.constexpr):
    """Blocks ``lo + t * BLOCK`` covering ``[lo, hi)``: ``t in [0, t1)`` and ``[t2, nb)`` need the mask,
    ``t in [t1, t2)`` lie inside ``[full_lo, full_hi)`` (every pair visible) and skip it.

    The last block may reach past ``hi``; every caller loads the rows (keys) past ``hi`` as zeros, which
    contribute nothing, so when ``full_hi >= hi`` that partial block is unmasked too (before session 18 it
    took the masked branch: in the dK/dV kernel the last, partial step of almost every key block)."""
    nb = tl.cdiv(tl.maximum(hi - lo, 0), BLOCK)
    t1 = tl.cdiv(tl.maximum(full_lo - lo, 0), BLOCK)
    t1 = tl.minimum(t1, nb)
    t2 = tl.where(full_hi >= hi, nb, tl.maximum(full_hi - lo, 0) // BLOCK)
    t2 = tl.minimum(tl.maximum(t1, t2), nb)
    return t1, t2, nb


@triton.jit
def _tanh_approx(x):
    return tl.inline_asm_elementwise(
        "tanh.approx.f32 $0, $1;", "=r,r", [x], dtype=tl.float32, is_pure=True, pack=1
    )


@triton.jit
def _sigmoid(qk, alpha, FAST: tl.constexpr):
    """``sigmoid(alpha * qk)`` in fp32.

    ``FAST`` (bf16 on a GPU): ``0.5 + 0.5 tanh(alpha qk / 2)`` with the one-instruction
    ``tanh.approx.f32`` (relative error ~2^-11, far below bf16's 2^-8). The exp2 + divide form costs
    two special-function instructions per score, which on Hopper take as long as the two matmuls
    of the forward at D=128; one is half of that.
    """
    if FAST:
        sig = 0.5 + 0.5 * _tanh_approx(qk * (0.5 * alpha))
    else:
        sig = 1.0 / (1.0 + tl.exp2(qk * (-1.4426950408889634 * alpha)))
    return sig


@triton.jit
def _silu_a_bf16x2(h, u):
    """``bf16(u (1 + tanh(h)))`` two scores per instruction: packed bf16 ``tanh.approx`` and FMA (sm_90)."""
    return tl.inline_asm_elementwise(
        """{
        .reg .b32 hh, uu, tt;
        cvt.rn.bf16x2.f32 hh, $2, $1;
        cvt.rn.bf16x2.f32 uu, $4, $3;
        tanh.approx.bf16x2 tt, hh;
        fma.rn.bf16x2 $0, uu, tt, uu;
        }""",
        "=r,r,r,r,r",
        [h, u],
        dtype=tl.bfloat16,
        is_pure=True,
        pack=2,
    )


@triton.jit
def _silu_bf16x2(h):
    """``bf16(h (1 + tanh(h))) = bf16(silu(2 h))`` two scores per instruction (sm_90): one conversion, the
    packed ``tanh.approx`` and one FMA; the ``1/S`` of the forward is applied to the accumulator instead."""
    return tl.inline_asm_elementwise(
        """{
        .reg .b32 hh, tt;
        cvt.rn.bf16x2.f32 hh, $2, $1;
        tanh.approx.bf16x2 tt, hh;
        fma.rn.bf16x2 $0, hh, tt, hh;
        }""",
        "=r,r,r",
        [h],
        dtype=tl.bfloat16,
        is_pure=True,
        pack=2,
    )


@triton.jit
def _silu_a(qk, alpha, scale_a, FAST: tl.constexpr, UNIT: tl.constexpr = False):
    """``a = silu(alpha qk) / S`` in fp32 (``scale_a = alpha / S``).

    ``FAST``: with ``h = alpha qk / 2`` and ``t = tanh(h)``, ``a = (qk scale_a / 2) (1 + t)``: two
    multiplies and one FMA around the ``tanh.approx`` (the scalar factors fold at compile time).
    ``UNIT``: ``silu(alpha qk)`` itself (``S = 1``; the caller scales its accumulator by ``1/S``): one
    multiply less per score."""
    if FAST:
        h = qk * (0.5 * alpha)
        t = _tanh_approx(h)
        if UNIT:
            u = h
        else:
            u = qk * (0.5 * scale_a)
        a = u + u * t
    elif UNIT:
        a = qk * _sigmoid(qk, alpha, False) * alpha
    else:
        a = qk * _sigmoid(qk, alpha, False) * scale_a
    return a


@triton.jit
def _silu_a_ds(qk, dp, alpha, scale_a, FAST: tl.constexpr, UNIT: tl.constexpr = False):
    """``(a, alpha ds)``: ``a = silu(s) / S`` and ``alpha * ds = alpha dp sig(s) (1 + s (1 - sig(s))) / S``
    with ``s = alpha qk`` (``scale_a = alpha / S``).

    ``FAST``: with ``h = s / 2``, ``t = tanh(h)``: ``sig = (1 + t) / 2``, ``1 - sig = (1 - t) / 2``, so
    ``sig (1 + s (1 - sig)) = ((1 + t) + h (1 - t^2)) / 2``: one ``tanh.approx`` and a few FMAs.

    ``UNIT``: ``(S a, alpha ds / ds_scale(scale_a, FAST))``: the constant factors are left to the caller,
    which applies them once to its fp32 accumulators (``1/S`` for ``a``, ``ds_scale`` for ``ds``): two
    multiplies less per score."""
    if FAST:
        h = qk * (0.5 * alpha)
        t = _tanh_approx(h)
        p = 1.0 + t
        r = h * (1.0 - t * t) + p
        if UNIT:
            a = h * p
            ds = dp * r
        else:
            u = qk * (0.5 * scale_a)
            a = u * p
            ds = dp * (0.5 * scale_a) * r
    else:
        sig = _sigmoid(qk, alpha, False)
        if UNIT:
            a = qk * sig * alpha
            ds = dp * sig * (1.0 + qk * alpha * (1.0 - sig))
        else:
            a = qk * sig * scale_a
            ds = dp * sig * (1.0 + qk * alpha * (1.0 - sig)) * scale_a
    return a, ds


@triton.jit
def _ds_scale(scale_a, FAST: tl.constexpr):
    """The factor ``_silu_a_ds(..., UNIT=True)`` leaves out of ``alpha ds``."""
    if FAST:
        return 0.5 * scale_a
    else:
        return scale_a
