"""Chunked gated delta rule, forward kernels and launchers (chunk ``BT = 64``).

Per chunk of a sequence and value head, with ``G_t`` the chunk-local inclusive cumulative sum of
the log gates and ``S0`` the state entering the chunk (notation of ``../README.md``)::

    A_ts = beta_t exp(G_t - G_s) k_t . k_s   (s < t)        T = (I + A)^-1   (unit lower)
    W    = T (beta exp(G) * K)   [BT, K]                    U~ = T (beta * V)   [BT, V]
    U    = U~ - W S0             (v_new: the delta-rule updates of the chunk's tokens)
    O    = scale ((exp(G) * Q) S0 + ((Q K^T) * exp(G_t - G_s) [t >= s]) U)
    S    = exp(G_last) S0 + (exp(G_last - G) * K)^T U      (state entering the next chunk)

Kernels: ``kkt_solve`` (G and T by 16x16 blocks, one program per chunk and head), ``wu`` (W and U~,
T loaded once per chunk and head), ``h`` (the sequential state pass, one program per sequence, head
and V block), ``o`` (one program per chunk, head and V block). Intermediates W, U~, U and the
per-chunk states are held in the input dtype (fp32 for fp16/fp32 inputs); gates, T and the running
state are fp32. Launch configs: ``common.launch_config``.
"""

from __future__ import annotations

import math

import torch
import triton
import triton.language as tl

from ..._core.alloc import new_empty
from ..._core.env import env_choice
from ..._core.launch import launch
from .common import (
    BT,
    DEEP_K_ROW_BYTES,
    _c,
    _dot_f32_lhs,
    _exp,
    _floor_gate,
    _inv16,
    _l2n,
    _num_sms,
    _pow2_groups16,
    _seq_of_slot,
    _times_groups16,
    block_k,
    dot_precision,
    exact_exp,
    inter_dtype,
    keep_fp32,
    launch_config,
    num_slots,
    state_prefetch,
)
from .l2norm import EPS as L2NORM_EPS

# ---------------------------------------------------------------------------------------------
# prepare: chunk-local gate cumsum, the WY inverse, w and u


@triton.jit
def _rows16(row0, b: tl.constexpr, eos):
    r = row0 + b * 16 + tl.arange(0, 16)
    return r.to(tl.int64), r < eos


@triton.jit
def _store_ainv16(AINV, r, m, i_hv, col: tl.constexpr, blk, HV: tl.constexpr, BT: tl.constexpr):
    o16 = tl.arange(0, 16)
    tl.store(AINV + (r[:, None] * HV + i_hv) * BT + col + o16[None, :], blk, mask=m[:, None])


@triton.jit
def _load_blk16(
    AINV, row0, bi: tl.constexpr, bj: tl.constexpr, eos, i_hv, HV: tl.constexpr, BT: tl.constexpr
):
    r = row0 + bi * 16 + tl.arange(0, 16)
    o16 = tl.arange(0, 16)
    p = (r.to(tl.int64)[:, None] * HV + i_hv) * BT + bj * 16 + o16[None, :]
    return tl.load(p + AINV, mask=(r < eos)[:, None], other=0.0)


@triton.jit
def _gated_delta_fwd_kkt_solve_kernel(
    K_,
    RK,
    G,
    BETA,
    GC,
    AINV,
    CU,
    N,
    H: tl.constexpr,
    HV: tl.constexpr,
    K: tl.constexpr,
    BT: tl.constexpr,
    BK: tl.constexpr,
    INV_POW: tl.constexpr,
    DOT_PREC: tl.constexpr,
    EXACT_EXP: tl.constexpr,
    NORM: tl.constexpr,
):
    """Per chunk and value head: G (chunk-local gate cumsum) and ``T = (I + A)^-1`` [BT, BT] fp32.

    ``A`` comes from one [BT, K] x [K, BT] dot and is written to AINV; after a barrier its 16x16
    blocks are read back (16-row dots would replicate the [16, K] key blocks in every warp: 255
    registers and spills), and T overwrites A block-row by block-row after a second barrier (every
    block of A is loaded before any block of T is stored)."""
    i_s = tl.program_id(0)
    i_hv = tl.program_id(1)
    i_n, i_t = _seq_of_slot(CU, i_s, N, BT)
    bos = tl.load(CU + i_n).to(tl.int32)
    eos = tl.load(CU + i_n + 1).to(tl.int32)
    row0 = bos + i_t * BT
    if row0 >= eos:
        return
    i_h = i_hv // (HV // H)
    o_t = tl.arange(0, BT)
    rows = (row0 + o_t).to(tl.int64)
    m_t = (row0 + o_t) < eos
    o_k = tl.arange(0, BK)
    m_k = o_k < K

    b_g = tl.cumsum(_floor_gate(tl.load(G + rows * HV + i_hv, mask=m_t, other=0.0).to(tl.float32)), 0)
    tl.store(GC + rows * HV + i_hv, b_g, mask=m_t)
    b_beta = tl.load(BETA + rows * HV + i_hv, mask=m_t, other=0.0).to(tl.float32)
    b_k = tl.load(
        K_ + (rows[:, None] * H + i_h) * K + o_k[None, :], mask=m_t[:, None] & m_k[None, :], other=0.0
    )
    b_k = _l2n(b_k, RK, rows, m_t, i_h, H, NORM)
    b_kk = tl.dot(b_k, tl.trans(b_k), input_precision=DOT_PREC)
    strict = (o_t[:, None] > o_t[None, :]) & m_t[:, None]
    b_a = tl.where(strict, b_kk * _exp(tl.where(strict, b_g[:, None] - b_g[None, :], 0.0), EXACT_EXP), 0.0)
    b_a = b_a * b_beta[:, None]
    tl.store(AINV + (rows[:, None] * HV + i_hv) * BT + o_t[None, :], b_a, mask=m_t[:, None])
    tl.debug_barrier()

    a00 = _load_blk16(AINV, row0, 0, 0, eos, i_hv, HV, BT)
    a11 = _load_blk16(AINV, row0, 1, 1, eos, i_hv, HV, BT)
    a22 = _load_blk16(AINV, row0, 2, 2, eos, i_hv, HV, BT)
    a33 = _load_blk16(AINV, row0, 3, 3, eos, i_hv, HV, BT)
    a10 = _load_blk16(AINV, row0, 1, 0, eos, i_hv, HV, BT)
    a20 = _load_blk16(AINV, row0, 2, 0, eos, i_hv, HV, BT)
    a21 = _load_blk16(AINV, row0, 2, 1, eos, i_hv, HV, BT)
    a30 = _load_blk16(AINV, row0, 3, 0, eos, i_hv, HV, BT)
    a31 = _load_blk16(AINV, row0, 3, 1, eos, i_hv, HV, BT)
    a32 = _load_blk16(AINV, row0, 3, 2, eos, i_hv, HV, BT)
    tl.debug_barrier()

    r0, m0 = _rows16(row0, 0, eos)
    r1, m1 = _rows16(row0, 1, eos)
    r2, m2 = _rows16(row0, 2, eos)
    r3, m3 = _rows16(row0, 3, eos)
    # T_ii = (I + A_ii)^-1, T_ij = -T_ii sum_{j<=m<i} A_im T_mj
    zero = tl.zeros([16, 16], dtype=tl.float32)
    t00 = _inv16(a00, INV_POW, DOT_PREC)
    _store_ainv16(AINV, r0, m0, i_hv, 0, t00, HV, BT)
    _store_ainv16(AINV, r0, m0, i_hv, 16, zero, HV, BT)
    _store_ainv16(AINV, r0, m0, i_hv, 32, zero, HV, BT)
    _store_ainv16(AINV, r0, m0, i_hv, 48, zero, HV, BT)
    t11 = _inv16(a11, INV_POW, DOT_PREC)
    t10 = -tl.dot(t11, tl.dot(a10, t00, input_precision=DOT_PREC), input_precision=DOT_PREC)
    _store_ainv16(AINV, r1, m1, i_hv, 0, t10, HV, BT)
    _store_ainv16(AINV, r1, m1, i_hv, 16, t11, HV, BT)
    _store_ainv16(AINV, r1, m1, i_hv, 32, zero, HV, BT)
    _store_ainv16(AINV, r1, m1, i_hv, 48, zero, HV, BT)
    t22 = _inv16(a22, INV_POW, DOT_PREC)
    t21 = -tl.dot(t22, tl.dot(a21, t11, input_precision=DOT_PREC), input_precision=DOT_PREC)
    t20 = -tl.dot(
        t22,
        tl.dot(a20, t00, input_precision=DOT_PREC) + tl.dot(a21, t10, input_precision=DOT_PREC),
        input_precision=DOT_PREC,
    )
    _store_ainv16(AINV, r2, m2, i_hv, 0, t20, HV, BT)
    _store_ainv16(AINV, r2, m2, i_hv, 16, t21, HV, BT)
    _store_ainv16(AINV, r2, m2, i_hv, 32, t22, HV, BT)
    _store_ainv16(AINV, r2, m2, i_hv, 48, zero, HV, BT)
    t33 = _inv16(a33, INV_POW, DOT_PREC)
    t32 = -tl.dot(t33, tl.dot(a32, t22, input_precision=DOT_PREC), input_precision=DOT_PREC)
    t31 = -tl.dot(
        t33,
        tl.dot(a31, t11, input_precision=DOT_PREC) + tl.dot(a32, t21, input_precision=DOT_PREC),
        input_precision=DOT_PREC,
    )
    t30 = -tl.dot(
        t33,
        tl.dot(a30, t00, input_precision=DOT_PREC)
        + tl.dot(a31, t10, input_precision=DOT_PREC)
        + tl.dot(a32, t20, input_precision=DOT_PREC),
        input_precision=DOT_PREC,
    )
    _store_ainv16(AINV, r3, m3, i_hv, 0, t30, HV, BT)
    _store_ainv16(AINV, r3, m3, i_hv, 16, t31, HV, BT)
    _store_ainv16(AINV, r3, m3, i_hv, 32, t32, HV, BT)
    _store_ainv16(AINV, r3, m3, i_hv, 48, t33, HV, BT)


@triton.jit
def _load_gate16(G, r, m, i_hv, HV: tl.constexpr):
    return tl.load(G + r * HV + i_hv, mask=m, other=0.0).to(tl.float32)


@triton.jit
def _load_k16(K_, RK, r, m, i_h, o_k, m_k, H: tl.constexpr, K: tl.constexpr, NORM: tl.constexpr):
    x = tl.load(K_ + (r[:, None] * H + i_h) * K + o_k[None, :], mask=m[:, None] & m_k[None, :], other=0.0)
    return _l2n(x, RK, r, m, i_h, H, NORM)


@triton.jit
def _load_k16_norm(
    K_, KN, RKO, r, m, i_h, o_k, m_k, STORE, H: tl.constexpr, K: tl.constexpr, EPS: tl.constexpr
):  # fmt: skip
    """A 16-row block of raw k, L2-normalised here with ``l2norm``'s arithmetic (``x * (1 / sqrt(sum x^2 +
    eps))`` in fp32, rounded to k's dtype); ``STORE`` (one value head of the group): the normalised rows and
    their factors go to KN / RKO for the later kernels and the backward (``chunk_fwd(norm_k_out=...)``)."""
    p = (r[:, None] * H + i_h) * K + o_k[None, :]
    mask = m[:, None] & m_k[None, :]
    x = tl.load(K_ + p, mask=mask, other=0.0).to(tl.float32)
    rs = 1.0 / tl.sqrt(tl.sum(x * x, 1) + EPS)
    y = (x * rs[:, None]).to(K_.dtype.element_ty)
    if STORE:
        tl.store(KN + p, y, mask=mask)
        tl.store(RKO + r * H + i_h, rs, mask=m)
    return y


@triton.jit
def _kkt_block(ki, kj, b_i, g_i, g_j, DIAG: tl.constexpr, DOT_PREC: tl.constexpr, EXACT_EXP: tl.constexpr):
    """``A_ij = beta_i * exp(G_i - G_j) * (k_i k_j^T)`` for 16-row blocks; the diagonal block is
    strictly lower-triangular. Gates ``G`` are chunk-local cumulative sums (natural log)."""
    a = tl.dot(ki, tl.trans(kj), input_precision=DOT_PREC)
    d = g_i[:, None] - g_j[None, :]
    if DIAG:
        o = tl.arange(0, 16)
        strict = o[:, None] > o[None, :]
        a = tl.where(strict, a * _exp(tl.where(strict, d, 0.0), EXACT_EXP), 0.0)
    else:
        a = a * _exp(d, EXACT_EXP)
    return a * b_i[:, None]


@triton.jit
def _gated_delta_fwd_kkt_solve16_kernel(
    K_,
    RK,
    G,
    BETA,
    GC,
    AINV,
    CU,
    N,
    H: tl.constexpr,
    HV: tl.constexpr,
    K: tl.constexpr,
    BT: tl.constexpr,
    BK: tl.constexpr,
    INV_POW: tl.constexpr,
    DOT_PREC: tl.constexpr,
    EXACT_EXP: tl.constexpr,
    NORM: tl.constexpr,
    KN,
    RKO,
    NORM_OUT: tl.constexpr,
    EPS: tl.constexpr,
):
    """Variant of ``_gated_delta_fwd_kkt_solve_kernel`` building A from 16-row dots (no memory round trip).

    Nothing else is live: the four 16-row key blocks (bf16) and the 16x16 blocks of A and T. ``NORM_OUT``
    (``chunk_fwd(norm_k_out=...)``): K_ is the raw k, L2-normalised here (``_load_k16_norm``) and written to KN
    with its factors in RKO by the first value head of each group: no separate l2norm launch for k."""
    i_s = tl.program_id(0)
    i_hv = tl.program_id(1)
    i_n, i_t = _seq_of_slot(CU, i_s, N, BT)
    bos = tl.load(CU + i_n).to(tl.int32)
    eos = tl.load(CU + i_n + 1).to(tl.int32)
    row0 = bos + i_t * BT
    if row0 >= eos:
        return
    i_h = i_hv // (HV // H)
    o_k = tl.arange(0, BK)
    m_k = o_k < K

    r0, m0 = _rows16(row0, 0, eos)
    r1, m1 = _rows16(row0, 1, eos)
    r2, m2 = _rows16(row0, 2, eos)
    r3, m3 = _rows16(row0, 3, eos)
    # chunk-local inclusive cumsum of the gates, by 16-row blocks
    raw0 = _floor_gate(_load_gate16(G, r0, m0, i_hv, HV))
    raw1 = _floor_gate(_load_gate16(G, r1, m1, i_hv, HV))
    raw2 = _floor_gate(_load_gate16(G, r2, m2, i_hv, HV))
    raw3 = _floor_gate(_load_gate16(G, r3, m3, i_hv, HV))
    c1 = tl.sum(raw0, 0)
    c2 = c1 + tl.sum(raw1, 0)
    c3 = c2 + tl.sum(raw2, 0)
    g0 = tl.cumsum(raw0, 0)
    g1 = tl.cumsum(raw1, 0) + c1
    g2 = tl.cumsum(raw2, 0) + c2
    g3 = tl.cumsum(raw3, 0) + c3
    tl.store(GC + r0 * HV + i_hv, g0, mask=m0)
    tl.store(GC + r1 * HV + i_hv, g1, mask=m1)
    tl.store(GC + r2 * HV + i_hv, g2, mask=m2)
    tl.store(GC + r3 * HV + i_hv, g3, mask=m3)

    b0 = _load_gate16(BETA, r0, m0, i_hv, HV)
    b1 = _load_gate16(BETA, r1, m1, i_hv, HV)
    b2 = _load_gate16(BETA, r2, m2, i_hv, HV)
    b3 = _load_gate16(BETA, r3, m3, i_hv, HV)
    if NORM_OUT:
        first = i_hv % (HV // H) == 0
        k0 = _load_k16_norm(K_, KN, RKO, r0, m0, i_h, o_k, m_k, first, H, K, EPS)
        k1 = _load_k16_norm(K_, KN, RKO, r1, m1, i_h, o_k, m_k, first, H, K, EPS)
        k2 = _load_k16_norm(K_, KN, RKO, r2, m2, i_h, o_k, m_k, first, H, K, EPS)
        k3 = _load_k16_norm(K_, KN, RKO, r3, m3, i_h, o_k, m_k, first, H, K, EPS)
    else:
        k0 = _load_k16(K_, RK, r0, m0, i_h, o_k, m_k, H, K, NORM)
        k1 = _load_k16(K_, RK, r1, m1, i_h, o_k, m_k, H, K, NORM)
        k2 = _load_k16(K_, RK, r2, m2, i_h, o_k, m_k, H, K, NORM)
        k3 = _load_k16(K_, RK, r3, m3, i_h, o_k, m_k, H, K, NORM)

    # T = (I + A)^-1 by blocks: T_ii = (I + A_ii)^-1, T_ij = -T_ii sum_{j<=m<i} A_im T_mj; each row
    # block of T is stored as soon as it is complete so that few blocks are live at once
    zero = tl.zeros([16, 16], dtype=tl.float32)
    t00 = _inv16(_kkt_block(k0, k0, b0, g0, g0, True, DOT_PREC, EXACT_EXP), INV_POW, DOT_PREC)
    _store_ainv16(AINV, r0, m0, i_hv, 0, t00, HV, BT)
    _store_ainv16(AINV, r0, m0, i_hv, 16, zero, HV, BT)
    _store_ainv16(AINV, r0, m0, i_hv, 32, zero, HV, BT)
    _store_ainv16(AINV, r0, m0, i_hv, 48, zero, HV, BT)
    t11 = _inv16(_kkt_block(k1, k1, b1, g1, g1, True, DOT_PREC, EXACT_EXP), INV_POW, DOT_PREC)
    a10 = _kkt_block(k1, k0, b1, g1, g0, False, DOT_PREC, EXACT_EXP)
    t10 = -tl.dot(t11, tl.dot(a10, t00, input_precision=DOT_PREC), input_precision=DOT_PREC)
    _store_ainv16(AINV, r1, m1, i_hv, 0, t10, HV, BT)
    _store_ainv16(AINV, r1, m1, i_hv, 16, t11, HV, BT)
    _store_ainv16(AINV, r1, m1, i_hv, 32, zero, HV, BT)
    _store_ainv16(AINV, r1, m1, i_hv, 48, zero, HV, BT)
    t22 = _inv16(_kkt_block(k2, k2, b2, g2, g2, True, DOT_PREC, EXACT_EXP), INV_POW, DOT_PREC)
    a20 = _kkt_block(k2, k0, b2, g2, g0, False, DOT_PREC, EXACT_EXP)
    a21 = _kkt_block(k2, k1, b2, g2, g1, False, DOT_PREC, EXACT_EXP)
    t21 = -tl.dot(t22, tl.dot(a21, t11, input_precision=DOT_PREC), input_precision=DOT_PREC)
    t20 = -tl.dot(
        t22,
        tl.dot(a20, t00, input_precision=DOT_PREC) + tl.dot(a21, t10, input_precision=DOT_PREC),
        input_precision=DOT_PREC,
    )
    _store_ainv16(AINV, r2, m2, i_hv, 0, t20, HV, BT)
    _store_ainv16(AINV, r2, m2, i_hv, 16, t21, HV, BT)
    _store_ainv16(AINV, r2, m2, i_hv, 32, t22, HV, BT)
    _store_ainv16(AINV, r2, m2, i_hv, 48, zero, HV, BT)
    t33 = _inv16(_kkt_block(k3, k3, b3, g3, g3, True, DOT_PREC, EXACT_EXP), INV_POW, DOT_PREC)
    a30 = _kkt_block(k3, k0, b3, g3, g0, False, DOT_PREC, EXACT_EXP)
    a31 = _kkt_block(k3, k1, b3, g3, g1, False, DOT_PREC, EXACT_EXP)
    a32 = _kkt_block(k3, k2, b3, g3, g2, False, DOT_PREC, EXACT_EXP)
    t32 = -tl.dot(t33, tl.dot(a32, t22, input_precision=DOT_PREC), input_precision=DOT_PREC)
    t31 = -tl.dot(
        t33,
        tl.dot(a31, t11, input_precision=DOT_PREC) + tl.dot(a32, t21, input_precision=DOT_PREC),
        input_precision=DOT_PREC,
    )
    t30 = -tl.dot(
        t33,
        tl.dot(a30, t00, input_precision=DOT_PREC)
        + tl.dot(a31, t10, input_precision=DOT_PREC)
        + tl.dot(a32, t20, input_precision=DOT_PREC),
        input_precision=DOT_PREC,
    )
    _store_ainv16(AINV, r3, m3, i_hv, 0, t30, HV, BT)
    _store_ainv16(AINV, r3, m3, i_hv, 16, t31, HV, BT)
    _store_ainv16(AINV, r3, m3, i_hv, 32, t32, HV, BT)
    _store_ainv16(AINV, r3, m3, i_hv, 48, t33, HV, BT)


@triton.jit
def _gated_delta_fwd_wu_kernel(
    K_,
    RK,
    V_,
    BETA,
    GC,
    AINV,
    W,
    U,
    CU,
    N,
    H: tl.constexpr,
    HV: tl.constexpr,
    K: tl.constexpr,
    V: tl.constexpr,
    BT: tl.constexpr,
    BC: tl.constexpr,
    DOT_PREC: tl.constexpr,
    EXACT_EXP: tl.constexpr,
    NORM: tl.constexpr,
):
    """One ``[BT, BC]`` column tile of ``W = T (beta exp(G) * K)`` (tiles ``c < cdiv(K, BC)``) or of
    ``U~ = T (beta * V)`` (the following tiles), per chunk and value head."""
    i_s = tl.program_id(0)
    i_hv = tl.program_id(1)
    i_c = tl.program_id(2)
    i_n, i_t = _seq_of_slot(CU, i_s, N, BT)
    bos = tl.load(CU + i_n).to(tl.int32)
    eos = tl.load(CU + i_n + 1).to(tl.int32)
    row0 = bos + i_t * BT
    if row0 >= eos:
        return
    i_h = i_hv // (HV // H)
    o_t = tl.arange(0, BT)
    rows = (row0 + o_t).to(tl.int64)
    m_t = (row0 + o_t) < eos
    # T may be kept by the forward in the input dtype (ops.SAVE_T="input"); a no-op cast for fp32
    b_a = tl.load(AINV + (rows[:, None] * HV + i_hv) * BT + o_t[None, :], mask=m_t[:, None], other=0.0).to(
        tl.float32
    )
    b_beta = tl.load(BETA + rows * HV + i_hv, mask=m_t, other=0.0).to(tl.float32)
    o_c = tl.arange(0, BC)
    NK: tl.constexpr = (K + BC - 1) // BC
    w_dt = W.dtype.element_ty
    if i_c < NK:
        o_k = i_c * BC + o_c
        m = m_t[:, None] & (o_k < K)[None, :]
        b_g = tl.load(GC + rows * HV + i_hv, mask=m_t, other=0.0)
        b_f = tl.where(m_t, b_beta * _exp(b_g, EXACT_EXP), 0.0)
        b_k = tl.load(K_ + (rows[:, None] * H + i_h) * K + o_k[None, :], mask=m, other=0.0)
        b_k = _l2n(b_k, RK, rows, m_t, i_h, H, NORM)
        b_x = b_k.to(tl.float32) * b_f[:, None]
        b_w = tl.dot(b_a, b_x, input_precision=DOT_PREC)
        tl.store(W + (rows[:, None] * HV + i_hv) * K + o_k[None, :], b_w.to(w_dt), mask=m)
    else:
        o_v = (i_c - NK) * BC + o_c
        m = m_t[:, None] & (o_v < V)[None, :]
        p_v = (rows[:, None] * HV + i_hv) * V + o_v[None, :]
        b_y = tl.load(V_ + p_v, mask=m, other=0.0).to(tl.float32) * b_beta[:, None]
        b_u = tl.dot(b_a, b_y, input_precision=DOT_PREC)
        tl.store(U + p_v, b_u.to(w_dt), mask=m)


@triton.jit
def _gated_delta_fwd_wu_loop_kernel(
    K_,
    RK,
    V_,
    BETA,
    GC,
    AINV,
    W,
    U,
    CU,
    N,
    H: tl.constexpr,
    HV: tl.constexpr,
    K: tl.constexpr,
    V: tl.constexpr,
    BT: tl.constexpr,
    BC: tl.constexpr,
    DOT_PREC: tl.constexpr,
    EXACT_EXP: tl.constexpr,
    LOWP_W: tl.constexpr,
    LOWP_U: tl.constexpr,
    NORM: tl.constexpr,
    DO_U: tl.constexpr,
):
    """``W = T (beta exp(G) * K)`` and (``DO_U``) ``U~ = T (beta * V)`` per chunk and value head, ``T`` loaded
    once and applied to ``[BT, BC]`` column tiles in turn (same products as the tiled kernel).

    ``LOWP_W`` / ``LOWP_U`` (bf16 inputs only, ``WU_LOWP``; W by default): that product takes T and its
    right operand rounded to the input dtype (bf16 tensor cores, as FLA) instead of tf32 with fp32 T."""
    i_s = tl.program_id(0)
    i_hv = tl.program_id(1)
    i_n, i_t = _seq_of_slot(CU, i_s, N, BT)
    bos = tl.load(CU + i_n).to(tl.int32)
    eos = tl.load(CU + i_n + 1).to(tl.int32)
    row0 = bos + i_t * BT
    if row0 >= eos:
        return
    i_h = i_hv // (HV // H)
    o_t = tl.arange(0, BT)
    rows = (row0 + o_t).to(tl.int64)
    m_t = (row0 + o_t) < eos
    # T may be kept by the forward in the input dtype (ops.SAVE_T="input"); a no-op cast for fp32
    b_a = tl.load(AINV + (rows[:, None] * HV + i_hv) * BT + o_t[None, :], mask=m_t[:, None], other=0.0).to(
        tl.float32
    )
    b_beta = tl.load(BETA + rows * HV + i_hv, mask=m_t, other=0.0).to(tl.float32)
    b_g = tl.load(GC + rows * HV + i_hv, mask=m_t, other=0.0)
    b_f = tl.where(m_t, b_beta * _exp(b_g, EXACT_EXP), 0.0)
    o_c = tl.arange(0, BC)
    w_dt = W.dtype.element_ty
    dt = K_.dtype.element_ty
    for i_c in range(0, tl.cdiv(K, BC)):
        o_k = i_c * BC + o_c
        m = m_t[:, None] & (o_k < K)[None, :]
        b_k = tl.load(K_ + (rows[:, None] * H + i_h) * K + o_k[None, :], mask=m, other=0.0)
        b_k = _l2n(b_k, RK, rows, m_t, i_h, H, NORM)
        b_x = b_k.to(tl.float32) * b_f[:, None]
        if LOWP_W:
            b_w = tl.dot(b_a.to(dt), b_x.to(dt))
        else:
            b_w = tl.dot(b_a, b_x, input_precision=DOT_PREC)
        tl.store(W + (rows[:, None] * HV + i_hv) * K + o_k[None, :], b_w.to(w_dt), mask=m)
    for i_c in range(0, tl.cdiv(V, BC) if DO_U else 0):
        o_v = i_c * BC + o_c
        m = m_t[:, None] & (o_v < V)[None, :]
        p_v = (rows[:, None] * HV + i_hv) * V + o_v[None, :]
        b_y = tl.load(V_ + p_v, mask=m, other=0.0).to(tl.float32) * b_beta[:, None]
        if LOWP_U:
            b_u = tl.dot(b_a.to(dt), b_y.to(dt))
        else:
            b_u = tl.dot(b_a, b_y, input_precision=DOT_PREC)
        tl.store(U + p_v, b_u.to(w_dt), mask=m)


# ---------------------------------------------------------------------------------------------
# the sequential state pass


@triton.jit
def _vnew_factored(
    AINV, BETA, V_, b_k, b_g, b_h, rows, m_t, p_v, m_tv, i_hv, HV: tl.constexpr, BT: tl.constexpr, dt,
    DOT_PREC: tl.constexpr, KEEP: tl.constexpr, WU_PREC: tl.constexpr, EXACT_EXP: tl.constexpr,
):  # fmt: skip
    """One chunk's ``v_new = U~ - W S`` in the factored form ``T (beta V - (beta exp(G) K) S)`` (``W = T X``,
    ``U~ = T Y``), fp32, from T (fp32 or kept in the input dtype), the loaded normalised ``b_k``, the v tile
    at ``p_v`` and the state ``b_h``: ``X S = diag(beta exp(G)) (K S)``, the product of the exact k tile and the
    state pass's operand with the factor applied to the ``[BT, BV]`` result (session 32: scaling the ``[BT, K]`` k tile
    in registers and copying it back to shared memory each step made the pass slower: H200, the fwd_h launches of one
    forward + backward on H16-8seqs 0.854 -> 0.812 ms, forward 0.793 -> 0.750 ms), then ``T Z`` with the w/u
    kernel's precision (``WU_PREC``). Neither W (whose ``[BT, K]`` product would be formed whole in every V block's program) nor U~ is formed."""
    b_a = tl.load(
        AINV + (rows[:, None] * HV + i_hv) * BT + tl.arange(0, BT)[None, :], mask=m_t[:, None], other=0.0
    )
    b_beta = tl.load(BETA + rows * HV + i_hv, mask=m_t, other=0.0).to(tl.float32)
    b_xs = (
        tl.dot(_c(b_k, dt, DOT_PREC, KEEP), _c(b_h, dt, DOT_PREC, KEEP), input_precision=DOT_PREC)
        * tl.where(m_t, b_beta * _exp(b_g, EXACT_EXP), 0.0)[:, None]
    )
    b_z = tl.load(V_ + p_v, mask=m_tv, other=0.0).to(tl.float32) * b_beta[:, None] - b_xs
    return tl.dot(b_a.to(tl.float32), b_z, input_precision=WU_PREC)


@triton.jit
def _fused_o(
    Q, RQ, O, b_k, b_h, b_vn, b_g, rows, m_t, o_t, o_k, m_k, p_o, m_o, i_h, scale, H: tl.constexpr, K: tl.constexpr,
    DOT_PREC: tl.constexpr, KEEP: tl.constexpr, EXACT_EXP: tl.constexpr, NORM: tl.constexpr,
):  # fmt: skip
    """One chunk's output tile at ``p_o`` inside the state pass (``FUSE_O``), by ``_gated_delta_fwd_o_kernel``'s
    arithmetic: ``o = scale (exp(G) q S0 + P v_new)``, ``P = (q k^T) * exp(G_t - G_s)`` (causal). ``b_h`` (the
    state the chunk starts with) and ``b_vn`` (its v_new) come rounded as that kernel reads them from HBUF / VNEW,
    whose dtype is also the tensor-core operand dtype; ``b_k`` is the (normalised) k tile."""
    dt = b_vn.dtype
    b_q = _l2n(
        tl.load(Q + (rows[:, None] * H + i_h) * K + o_k[None, :], mask=m_t[:, None] & m_k[None, :], other=0.0),
        RQ, rows, m_t, i_h, H, NORM,
    )  # fmt: skip
    b_o = (
        tl.dot(_c(b_q, dt, DOT_PREC, KEEP), _c(b_h, dt, DOT_PREC, KEEP), input_precision=DOT_PREC)
        * _exp(b_g, EXACT_EXP)[:, None]
    )
    b_qk = tl.dot(b_q, tl.trans(b_k), input_precision=DOT_PREC)
    causal = (o_t[:, None] >= o_t[None, :]) & m_t[:, None]
    b_p = tl.where(causal, b_qk * _exp(tl.where(causal, b_g[:, None] - b_g[None, :], 0.0), EXACT_EXP), 0.0)
    b_o = (b_o + _dot_f32_lhs(b_p, b_vn, DOT_PREC, KEEP)) * scale
    tl.store(O + p_o, b_o.to(O.dtype.element_ty), mask=m_o)


@triton.jit
def _load_dh(DHBUF, DHLO, offs, mask, DH_SPLIT: tl.constexpr, base, o_k, col0, m_row, V: tl.constexpr,
             BK: tl.constexpr, BV: tl.constexpr):  # fmt: skip
    """One dS tile in fp32: stored fp32, or (``DH_SPLIT``) as bf16 hi + lo parts, or (``DH_SPLIT == 2``,
    ``chunk_bwd.DH_F16``) as fp16 with a scale per 16 consecutive elements of a row in DHLO
    (``common._times_groups16``: the tile's rows ``o_k`` (``m_row``) and columns ``col0 + arange(BV)`` of the state
    from element ``base``; ``offs`` are those elements). The callers keep forming ``offs`` as they did before
    DH_F16: computing them from ``base`` here made the default recompute 4-9% slower (H200, session 49)."""
    b_dh = tl.load(DHBUF + offs, mask=mask, other=0.0).to(tl.float32)
    if DH_SPLIT == 2:
        b_dh = _times_groups16(b_dh, DHLO, base, o_k, col0, m_row, V, BK, BV)
    elif DH_SPLIT:
        b_dh += tl.load(DHLO + offs, mask=mask, other=0.0).to(tl.float32)
    return b_dh


@triton.jit
def _h_chain(
    K_, RK, W, U, V_, BETA, AINV, GC, H0, HT, HBUF, VNEW, DHBUF, DHLO, GH, Q, RQ, O, bos, eos, i_n, i_v, i_hv, i_h,
    scale, H: tl.constexpr, HV: tl.constexpr, K: tl.constexpr, V: tl.constexpr, BT: tl.constexpr, BK: tl.constexpr,
    BV: tl.constexpr, NG: tl.constexpr, USE_INITIAL_STATE: tl.constexpr, STORE_FINAL_STATE: tl.constexpr,
    COMPUTE_GH: tl.constexpr, DOT_PREC: tl.constexpr, KEEP: tl.constexpr, EXACT_EXP: tl.constexpr,
    NORM: tl.constexpr, PREFETCH: tl.constexpr, DH_SPLIT: tl.constexpr, FUSE_WU: tl.constexpr, WU_PREC: tl.constexpr,
    WITH_O: tl.constexpr, O_PREC: tl.constexpr, O_KEEP: tl.constexpr, LOOP_STAGES: tl.constexpr, HSEG, i_state,
    SEG: tl.constexpr, SEG_STORE: tl.constexpr, HS, H_F16: tl.constexpr,
):  # fmt: skip
    """The chain of ``_gated_delta_fwd_h_kernel`` over the chunks of rows ``[bos, eos)`` of sequence ``i_n`` (the
    whole sequence, or one segment of it), value head, V block: the initial state (H0 at state index ``i_state``),
    the chunk loop, the final state. ``WITH_O``: each step forms the chunk's output (``FUSE_O``) instead of storing
    its state and v_new. ``LOOP_STAGES``: the loop's software-pipeline depth. ``SEG_STORE``: the fp32 state
    entering every ``SEG``-th chunk goes to HSEG at its segment slot (``seg_chunks``)."""
    n_chunks = tl.cdiv(eos - bos, BT)
    slot0 = bos // BT + i_n
    o_k = tl.arange(0, BK)
    o_v = i_v * BV + tl.arange(0, BV)
    m_k = o_k < K
    m_v = o_v < V
    m_kv = m_k[:, None] & m_v[None, :]
    o_kv = o_k[:, None] * V + o_v[None, :]

    # [BK, BV] fp32 running state of this sequence and value head
    p_state = (i_state * HV + i_hv).to(tl.int64) * K * V
    if USE_INITIAL_STATE:
        b_h = tl.load(H0 + p_state + o_kv, mask=m_kv, other=0.0).to(tl.float32)
    else:
        b_h = tl.zeros([BK, BV], dtype=tl.float32)
    dt = W.dtype.element_ty
    o_t0 = tl.arange(0, BT)
    if PREFETCH:
        # the loads that feed no dot directly (the gates, and dS for the gate sums) are issued one chunk
        # ahead: the pipeliner only prefetches dot operands, so these stalled every step of the chain
        # (an empty sequence loads nothing: its last row eos - 1 belongs to another sequence, or is -1)
        m_t0 = (bos + o_t0) < eos
        b_g_nx = tl.load(GC + (bos + o_t0).to(tl.int64) * HV + i_hv, mask=m_t0, other=0.0)
        g_last_nx = tl.load(
            GC + (tl.minimum(bos + BT, eos) - 1).to(tl.int64) * HV + i_hv, mask=eos > bos, other=0.0
        )
        if COMPUTE_GH:
            m_dh0 = (o_k[:, None] < tl.where(n_chunks > 0, K, 0)) & m_v[None, :]
            p_dh0 = (slot0.to(tl.int64) * HV + i_hv) * K * V
            b_dh_nx = _load_dh(
                DHBUF, DHLO, p_dh0 + o_kv, m_dh0, DH_SPLIT, p_dh0, o_k, i_v * BV, o_k < tl.where(n_chunks > 0, K, 0),
                V, BK, BV,
            )  # fmt: skip
    for i_t in tl.range(0, n_chunks, num_stages=LOOP_STAGES):
        row0 = bos + i_t * BT
        rows = (row0 + o_t0).to(tl.int64)
        m_t = (row0 + o_t0) < eos
        last = (tl.minimum(row0 + BT, eos) - 1).to(tl.int64)
        p_slot = ((slot0 + i_t).to(tl.int64) * HV + i_hv) * K * V
        if not WITH_O:
            if H_F16:
                # the backward's recompute beside dhu (chunk_bwd.OVERLAP): S0 as fp16 times a power-of-two scale
                # per row and 16 columns (HS[element // 16]), 11 bits for dqkwg's gate sums sum(S0 * dS)
                b_hs, b_ph = _pow2_groups16(b_h, BK, BV)
                tl.store(HBUF + p_slot + o_kv, b_hs.to(HBUF.dtype.element_ty), mask=m_kv)
                o_g16 = i_v * (BV // 16) + tl.arange(0, BV // 16)
                tl.store(
                    HS + (p_slot // 16 + o_k[:, None] * (V // 16) + o_g16[None, :]),
                    b_ph,
                    mask=m_k[:, None] & (o_g16 < V // 16)[None, :],
                )
            else:
                tl.store(HBUF + p_slot + o_kv, b_h.to(HBUF.dtype.element_ty), mask=m_kv)
        if SEG_STORE:  # noqa: SIM102 (constexpr first: SEG is 0 without segments)
            # the exact fp32 state at each segment start, for the backward's segment-parallel recompute (its slot:
            # the slot schedule with segments for chunks). A branch, not a predicated store: the store's layout
            # conversion of the state tile would run every step (H200, session 28 round 1: the forward's pass
            # 0.483 -> 0.646 ms on H16-8seqs with the predicated store)
            if i_t % SEG == 0:
                p_seg = ((bos // (BT * SEG) + i_n + i_t // SEG).to(tl.int64) * HV + i_hv) * K * V
                tl.store(HSEG + p_seg + o_kv, b_h, mask=m_kv)
        if PREFETCH:
            b_g = b_g_nx
            g_last = g_last_nx
            k_nx = tl.where(i_t + 1 < n_chunks, K, 0)  # the next dS tile's rows: none after the last chunk
            rows_nx = rows + BT
            m_t_nx = (row0 + BT + o_t0) < eos
            b_g_nx = tl.load(GC + rows_nx * HV + i_hv, mask=m_t_nx, other=0.0)
            # (the next chunk's last row; for the last chunk this re-reads row eos - 1, in range)
            g_last_nx = tl.load(GC + (tl.minimum(row0 + 2 * BT, eos) - 1).to(tl.int64) * HV + i_hv)
        if COMPUTE_GH:
            # backward only: sum(S0 * dS) with the exact fp32 state; the gate gradient of the whole
            # chunk cancels against the k.dk terms, so rounding S0 here costs several x accuracy
            if PREFETCH:
                b_dh = b_dh_nx
                b_dh_nx = _load_dh(
                    DHBUF,
                    DHLO,
                    p_slot + HV * K * V + o_kv,
                    (o_k[:, None] < k_nx) & m_v[None, :],
                    DH_SPLIT,
                    p_slot + HV * K * V,
                    o_k,
                    i_v * BV,
                    o_k < k_nx,
                    V,
                    BK,
                    BV,
                )
            else:
                b_dh = _load_dh(
                    DHBUF, DHLO, p_slot + o_kv, m_kv, DH_SPLIT, p_slot, o_k, i_v * BV, m_k, V, BK, BV
                )
            tl.store(
                GH + ((slot0 + i_t).to(tl.int64) * HV + i_hv) * NG + i_v, tl.sum(tl.sum(b_h * b_dh, 1), 0)
            )

        p_u = (rows[:, None] * HV + i_hv) * V + o_v[None, :]
        if FUSE_WU:
            if not PREFETCH:
                b_g = tl.load(GC + rows * HV + i_hv, mask=m_t, other=0.0)
                g_last = tl.load(GC + last * HV + i_hv)
            b_k = tl.load(
                K_ + (rows[:, None] * H + i_h) * K + o_k[None, :],
                mask=m_t[:, None] & m_k[None, :],
                other=0.0,
            )
            b_k = _l2n(b_k, RK, rows, m_t, i_h, H, NORM)
            b_vn = _vnew_factored(
                AINV, BETA, V_, b_k, b_g, b_h, rows, m_t, p_u, m_t[:, None] & m_v[None, :], i_hv, HV, BT, dt,
                DOT_PREC, KEEP, WU_PREC, EXACT_EXP,
            )  # fmt: skip
        else:
            b_w = tl.load(
                W + (rows[:, None] * HV + i_hv) * K + o_k[None, :],
                mask=m_t[:, None] & m_k[None, :],
                other=0.0,
            )
            b_u = tl.load(U + p_u, mask=m_t[:, None] & m_v[None, :], other=0.0).to(tl.float32)
            b_vn = b_u - tl.dot(
                _c(b_w, dt, DOT_PREC, KEEP), _c(b_h, dt, DOT_PREC, KEEP), input_precision=DOT_PREC
            )
        b_vn = b_vn.to(dt)
        if not WITH_O:
            tl.store(VNEW + p_u, b_vn, mask=m_t[:, None] & m_v[None, :])

        if not PREFETCH and not FUSE_WU:
            b_g = tl.load(GC + rows * HV + i_hv, mask=m_t, other=0.0)
            g_last = tl.load(GC + last * HV + i_hv)
        if not FUSE_WU:
            b_k = tl.load(
                K_ + (rows[:, None] * H + i_h) * K + o_k[None, :],
                mask=m_t[:, None] & m_k[None, :],
                other=0.0,
            )
            b_k = _l2n(b_k, RK, rows, m_t, i_h, H, NORM)
        if WITH_O:
            _fused_o(
                Q, RQ, O, b_k, b_h.to(HBUF.dtype.element_ty), b_vn.to(VNEW.dtype.element_ty), b_g, rows, m_t, o_t0,
                o_k, m_k, p_u, m_t[:, None] & m_v[None, :], i_h, scale, H, K, O_PREC, O_KEEP, EXACT_EXP, NORM,
            )  # fmt: skip
        # the decay exp(G_last - G_t) scales the [BT, BV] updates rather than the [BT, K] keys
        b_vd = b_vn.to(tl.float32) * tl.where(m_t, _exp(g_last - b_g, EXACT_EXP), 0.0)[:, None]
        b_h = b_h * _exp(g_last, EXACT_EXP) + tl.dot(
            tl.trans(_c(b_k, dt, DOT_PREC, KEEP)), _c(b_vd, dt, DOT_PREC, KEEP), input_precision=DOT_PREC
        )
    if STORE_FINAL_STATE:
        tl.store(HT + p_state + o_kv, b_h, mask=m_kv)


@triton.jit
def _gated_delta_fwd_h_kernel(
    K_,
    RK,
    W,
    U,
    V_,
    BETA,
    AINV,
    GC,
    H0,
    HT,
    HBUF,
    VNEW,
    DHBUF,
    DHLO,
    GH,
    Q,
    RQ,
    O,
    CU,
    N,
    scale,
    o_max_len,
    H: tl.constexpr,
    HV: tl.constexpr,
    K: tl.constexpr,
    V: tl.constexpr,
    BT: tl.constexpr,
    BK: tl.constexpr,
    BV: tl.constexpr,
    NG: tl.constexpr,
    USE_INITIAL_STATE: tl.constexpr,
    STORE_FINAL_STATE: tl.constexpr,
    COMPUTE_GH: tl.constexpr,
    DOT_PREC: tl.constexpr,
    KEEP: tl.constexpr,
    EXACT_EXP: tl.constexpr,
    NORM: tl.constexpr,
    PREFETCH: tl.constexpr,
    DH_SPLIT: tl.constexpr,
    FUSE_WU: tl.constexpr,
    WU_PREC: tl.constexpr,
    FUSE_O: tl.constexpr,
    O_PREC: tl.constexpr,
    O_KEEP: tl.constexpr,
    O_STAGES: tl.constexpr,
    STAGES: tl.constexpr,
    HSEG=None,
    SEG: tl.constexpr = 0,
    SEG_MODE: tl.constexpr = 0,
    HS=None,
    H_F16: tl.constexpr = False,
):
    """The sequential state pass over the chunks of one (sequence, value head, V block): stores each
    chunk's starting state (HBUF) and ``v_new = U~ - W S`` (VNEW), steps ``S``; the final state (HT),
    and in the backward's recompute (``COMPUTE_GH``) the gate sums ``sum(S0 * dS)`` per chunk (GH).

    ``FUSE_WU`` (``chunk_fwd.fuse_wu``): W and U~ are not read from memory; ``v_new = T (beta V - X S)`` with
    ``X = beta exp(G) K`` (``_vnew_factored``) from T (AINV), beta, the gates, and the k and v tiles: T and v
    read per chunk instead of W and U~ (the same bytes), no w/u launch before, and one ``[BT, BT] x [BT, BV]``
    product more per step (``W`` and ``U`` are then empty tensors that give the dtypes).

    ``FUSE_O`` (``chunk_fwd.fuse_o``, forward only), for sequences of at most ``o_max_len`` tokens: each step also
    forms the chunk's output for its V block,
    ``o = scale (exp(G) q S0 + P v_new)`` with ``P = (q k^T) * exp(G_t - G_s)`` (causal), by ``_gated_delta_fwd_o_kernel``'s
    arithmetic on the same roundings (S0 to HBUF's dtype, v_new to VNEW's; ``O_PREC``, ``O_KEEP`` are that
    kernel's), so that sequence's per-chunk states and v_new are not stored (the output kernel skips it).

    Segments of ``SEG`` chunks (``seg_chunks``): ``SEG_MODE == 1`` (the forward) also stores the fp32 state
    entering each segment in HSEG ``[segment slots, HV, K, V]``; ``SEG_MODE == 2`` (the backward's recompute)
    runs one program per (segment slot, value head, V block) instead of per sequence, each starting from the
    forward's stored state: the same chain, cut into independent pieces."""
    scale = tl.cast(scale, tl.float32)  # Inductor passes Python floats as fp64 scalars
    i_v = tl.program_id(0)
    i_nh = tl.program_id(1)
    i_hv = i_nh % HV
    i_h = i_hv // (HV // H)
    if SEG_MODE == 2:
        i_seg = i_nh // HV  # the segment slot
        i_sn, i_s = _seq_of_slot(CU, i_seg, N, BT * SEG)
        s_bos = tl.load(CU + i_sn).to(tl.int32) + i_s * (BT * SEG)
        s_eos = tl.minimum(tl.load(CU + i_sn + 1).to(tl.int32), s_bos + BT * SEG)
        # (a slot past its sequence's last segment: no chunk; the state it loads, from a slot nothing wrote,
        # is unused)
        _h_chain(
            K_, RK, W, U, V_, BETA, AINV, GC, HSEG, HT, HBUF, VNEW, DHBUF, DHLO, GH, Q, RQ, O, s_bos, s_eos, i_sn,
            i_v, i_hv, i_h, scale, H, HV, K, V, BT, BK, BV, NG, True, False, COMPUTE_GH, DOT_PREC, KEEP, EXACT_EXP,
            NORM, PREFETCH, DH_SPLIT, FUSE_WU, WU_PREC, False, O_PREC, O_KEEP, STAGES, HSEG, i_seg, SEG, False, HS,
            H_F16,
        )  # fmt: skip
    else:
        i_n = i_nh // HV
        bos = tl.load(CU + i_n).to(tl.int32)
        eos = tl.load(CU + i_n + 1).to(tl.int32)
        if FUSE_O:
            # two loops, each without a runtime branch in its step (one inside the loop made both slower: session
            # 23 round 4): a sequence of at most o_max_len tokens forms its output here at O_STAGES pipeline stages
            # (one: what the extra tiles leave room for), a longer one stores its states and v_new at STAGES (the
            # unfused pass's, = the launch's num_stages) for the output kernel. Nothing tile-sized is computed
            # before the branch (live across it, such tiles cost the fused loop registers: 248 -> 320 B of spill)
            if eos - bos <= o_max_len:
                _h_chain(
                    K_, RK, W, U, V_, BETA, AINV, GC, H0, HT, HBUF, VNEW, DHBUF, DHLO, GH, Q, RQ, O, bos, eos, i_n, i_v, i_hv,
                    i_h, scale, H, HV, K, V, BT, BK, BV, NG, USE_INITIAL_STATE, STORE_FINAL_STATE, COMPUTE_GH, DOT_PREC,
                    KEEP, EXACT_EXP, NORM, PREFETCH, DH_SPLIT, FUSE_WU, WU_PREC, True, O_PREC, O_KEEP, O_STAGES, HSEG,
                    i_n, SEG, SEG_MODE == 1, HS, H_F16,
                )  # fmt: skip
            else:
                _h_chain(
                    K_, RK, W, U, V_, BETA, AINV, GC, H0, HT, HBUF, VNEW, DHBUF, DHLO, GH, Q, RQ, O, bos, eos, i_n, i_v, i_hv,
                    i_h, scale, H, HV, K, V, BT, BK, BV, NG, USE_INITIAL_STATE, STORE_FINAL_STATE, COMPUTE_GH, DOT_PREC,
                    KEEP, EXACT_EXP, NORM, PREFETCH, DH_SPLIT, FUSE_WU, WU_PREC, False, O_PREC, O_KEEP, STAGES, HSEG,
                    i_n, SEG, SEG_MODE == 1, HS, H_F16,
                )  # fmt: skip
        else:
            _h_chain(
                K_, RK, W, U, V_, BETA, AINV, GC, H0, HT, HBUF, VNEW, DHBUF, DHLO, GH, Q, RQ, O, bos, eos, i_n, i_v, i_hv,
                i_h, scale, H, HV, K, V, BT, BK, BV, NG, USE_INITIAL_STATE, STORE_FINAL_STATE, COMPUTE_GH, DOT_PREC,
                KEEP, EXACT_EXP, NORM, PREFETCH, DH_SPLIT, FUSE_WU, WU_PREC, False, O_PREC, O_KEEP, STAGES, HSEG, i_n,
                SEG, SEG_MODE == 1, HS, H_F16,
            )  # fmt: skip


# ---------------------------------------------------------------------------------------------
# the output


@triton.jit
def _gated_delta_fwd_o_kernel(
    Q,
    K_,
    RQ,
    RK,
    VNEW,
    HBUF,
    GC,
    O,
    CU,
    N,
    scale,
    o_min_len,
    H: tl.constexpr,
    HV: tl.constexpr,
    K: tl.constexpr,
    V: tl.constexpr,
    BT: tl.constexpr,
    BK: tl.constexpr,
    BV: tl.constexpr,
    DOT_PREC: tl.constexpr,
    KEEP: tl.constexpr,
    EXACT_EXP: tl.constexpr,
    NORM: tl.constexpr,
):
    """o per chunk, head and V block from the per-chunk states and v_new; only sequences longer than
    ``o_min_len`` tokens (-1: all; with ``FUSE_O`` the state pass wrote the others' o itself)."""
    scale = tl.cast(scale, tl.float32)  # Inductor passes Python floats as fp64 scalars
    i_s = tl.program_id(0)
    i_hv = tl.program_id(1)
    i_v = tl.program_id(2)
    i_n, i_t = _seq_of_slot(CU, i_s, N, BT)
    bos = tl.load(CU + i_n).to(tl.int32)
    eos = tl.load(CU + i_n + 1).to(tl.int32)
    row0 = bos + i_t * BT
    if row0 >= eos or eos - bos <= o_min_len:
        return
    i_h = i_hv // (HV // H)
    o_t = tl.arange(0, BT)
    rows = (row0 + o_t).to(tl.int64)
    m_t = (row0 + o_t) < eos
    o_k = tl.arange(0, BK)
    m_k = o_k < K
    o_v = i_v * BV + tl.arange(0, BV)
    m_v = o_v < V
    dt = VNEW.dtype.element_ty

    p_qk = (rows[:, None] * H + i_h) * K + o_k[None, :]
    m_tk = m_t[:, None] & m_k[None, :]
    b_q = _l2n(tl.load(Q + p_qk, mask=m_tk, other=0.0), RQ, rows, m_t, i_h, H, NORM)
    b_k = _l2n(tl.load(K_ + p_qk, mask=m_tk, other=0.0), RK, rows, m_t, i_h, H, NORM)
    b_h = tl.load(
        HBUF + (i_s.to(tl.int64) * HV + i_hv) * K * V + o_k[:, None] * V + o_v[None, :],
        mask=m_k[:, None] & m_v[None, :],
        other=0.0,
    )
    b_g = tl.load(GC + rows * HV + i_hv, mask=m_t, other=0.0)

    b_o = (
        tl.dot(_c(b_q, dt, DOT_PREC, KEEP), _c(b_h, dt, DOT_PREC, KEEP), input_precision=DOT_PREC)
        * _exp(b_g, EXACT_EXP)[:, None]
    )
    b_qk = tl.dot(b_q, tl.trans(b_k), input_precision=DOT_PREC)
    causal = (o_t[:, None] >= o_t[None, :]) & m_t[:, None]
    b_p = tl.where(causal, b_qk * _exp(tl.where(causal, b_g[:, None] - b_g[None, :], 0.0), EXACT_EXP), 0.0)
    p_v = (rows[:, None] * HV + i_hv) * V + o_v[None, :]
    m_tv = m_t[:, None] & m_v[None, :]
    b_vn = tl.load(VNEW + p_v, mask=m_tv, other=0.0)
    b_o = (b_o + _dot_f32_lhs(b_p, b_vn, DOT_PREC, KEEP)) * scale
    tl.store(O + p_v, b_o.to(O.dtype.element_ty), mask=m_tv)


# ---------------------------------------------------------------------------------------------
# launchers


def _prepare(k, v, g, beta, cu, saved=None, rk=None, wu: bool | str = True, norm_out=None):
    """``(gc [T, HV] fp32, T^-1 blocks [T, HV, BT] fp32, w [T, HV, K], u~ [T, HV, V])``; with ``wu`` False
    (the state passes form v_new from T themselves, ``FUSE_WU``) w and u are not computed (``None``), with
    ``wu="w"`` only W is (u ``None``: for ``dhu`` when only the state passes are fused). ``norm_out = (kn, rk)``
    (``[T, H, K]`` in k's dtype, ``[T, H]`` fp32; not with ``saved``): k is raw and the solve kernel writes its
    L2-normalised copy and factors there, which every later kernel then reads as k.

    ``rk`` ``[T, H]`` fp32: k's l2norm ``1 / sqrt(sum k^2 + eps)``, applied on load (``common._l2n``);
    None when k arrives normalised (or without l2norm).
    ``saved = (gc, T^-1)`` from an earlier call (the forward's, opt-in ``ops.SAVE_T``; T^-1 fp32 or
    in the input dtype): ``kkt_solve`` is skipped and only W and U~ are computed from them."""
    t, h, dk = k.shape
    hv, dv = v.shape[1], v.shape[2]
    n = cu.shape[0] - 1
    ns = num_slots(t, n)
    dev = k.device
    if saved is not None:
        gc, ainv = saved
    else:
        gc = new_empty((t, hv), dtype=torch.float32, device=dev)
        ainv = new_empty((t, hv, BT), dtype=torch.float32, device=dev)
    w = new_empty((t, hv, dk) if wu else (0,), dtype=inter_dtype(k.dtype, "w", t, hv), device=dev)
    u = new_empty((t, hv, dv) if wu is True else (0,), dtype=inter_dtype(k.dtype, "u", t, hv), device=dev)
    if ns > 0:
        prec = dot_precision(v.dtype, "kkt")  # the input dtype: k may be an fp32 copy (l2norm, fp16)
        exact = exact_exp(k.dtype)
        inv_pow, warps, _ = launch_config("fwd_kkt_solve", n_programs=ns * hv, v=dv)
        kkt = (
            _gated_delta_fwd_kkt_solve_kernel
            if KKT_VARIANT == "dot64"
            else _gated_delta_fwd_kkt_solve16_kernel
        )
    if norm_out is not None and saved is not None:
        raise ValueError("norm_out needs the solve kernel to run: not with saved (gc, T)")
    if ns > 0 and saved is None:
        extra = {}
        if kkt is _gated_delta_fwd_kkt_solve16_kernel:
            kn_out, rk_out = norm_out if norm_out is not None else (k, gc)
            extra = {"KN": kn_out, "RKO": rk_out, "NORM_OUT": norm_out is not None, "EPS": L2NORM_EPS}
        elif norm_out is not None:
            raise ValueError("norm_out needs the blocks16 solve kernel (JAGATTN_GD_KKT)")
        launch(
            kkt,
            (ns, hv),
            k,
            k if rk is None else rk,
            g,
            beta,
            gc,
            ainv,
            cu,
            n,
            H=h,
            HV=hv,
            K=dk,
            BT=BT,
            BK=block_k(dk),
            INV_POW=bool(inv_pow),
            DOT_PREC=prec,
            EXACT_EXP=exact,
            NORM=rk is not None,
            num_warps=warps,
            **extra,
        )
    if norm_out is not None:
        k = norm_out[0]  # the later kernels read the normalised copy
    if not wu:
        return gc, ainv, None, None
    do_u = wu is True
    if ns > 0:
        prec = dot_precision(v.dtype, "wu")
        bc, wu_warps, wu_stages = launch_config("fwd_wu", n_programs=ns * hv, v=dv)
        if WU_VARIANT == "loop":
            wu, grid = _gated_delta_fwd_wu_loop_kernel, (ns, hv)
        else:
            n_tiles = triton.cdiv(dk, bc) + (triton.cdiv(dv, bc) if wu is True else 0)
            wu, grid = _gated_delta_fwd_wu_kernel, (ns, hv, n_tiles)
        # every parameter passed explicitly (Inductor's launcher needs them all, defaults included)
        extra = {**_wu_lowp(prec, w.dtype, k.dtype), "DO_U": do_u} if WU_VARIANT == "loop" else {}
        launch(
            wu,
            grid,
            k,
            k if rk is None else rk,
            v,
            beta,
            gc,
            ainv,
            w,
            u,
            cu,
            n,
            H=h,
            HV=hv,
            K=dk,
            V=dv,
            BT=BT,
            BC=bc,
            DOT_PREC=prec,
            EXACT_EXP=exact,
            NORM=rk is not None,
            num_warps=wu_warps,
            num_stages=wu_stages,
            **extra,
        )
    return gc, ainv, w, u if do_u else None


# how A is built: "dot64" (one 64x64 dot, 16x16 blocks read back through memory) or "blocks16"
# (16-row dots in registers); an environment switch so the device check can run both
KKT_VARIANT = env_choice("JAGATTN_GD_KKT", ("blocks16", "dot64"), "blocks16")
# w/u: "loop" (T loaded once per chunk and head, column tiles in a loop) or "tiles" (a program per tile)
WU_VARIANT = env_choice("JAGATTN_GD_WU", ("loop", "tiles"), "loop")
# bf16 inputs, "loop" only: which w/u products run on bf16 tensor cores (T and the right operand
# rounded to bf16, as FLA) instead of tf32 with fp32 T. "w" = W = T (beta exp(G) K) (the default since
# session 8), "u" = U~ = T (beta V), "wu" = both, "off" = neither. Measured on the H200 (Triton 3.6,
# benchmarks/gd_lowp_t_diag.py, worst error / SPEC allowance over every output of the two 32k-token
# production gpu cases): "off" 0.60 / 0.86, "w" 0.60 / 0.86 (every output's ratio the same to two
# digits), "u" 1.74 and "wu" 1.74 on 32k-single (dg max-abs): U~'s rounding fails the rule, W's does
# not show. Speed, H16 8 x 4096: w/u kernel 0.573 -> 0.462 ms per fwd+bwd with "w" (fwd 1.092 -> 1.036
# ms, bwd 3.494 -> 3.436), "u" 0.499, "wu" 0.372 (session 6). The CPU interpreter's bf16 dot is
# unusable, so the CPU tests (fp32/fp16) never reach this path: GPU-only check.
WU_LOWP = env_choice("JAGATTN_GD_WU_LOWP", ("off", "u", "w", "wu"), "w")


def _wu_lowp(prec: str, w_dtype, k_dtype) -> dict:
    """``{"LOWP_W": .., "LOWP_U": ..}`` of the w/u products (``WU_LOWP``; the loop kernel and ``FUSE_WU``)."""
    lowp = prec == "tf32" and WU_LOWP != "off" and w_dtype == k_dtype
    return {"LOWP_W": lowp and WU_LOWP in ("w", "wu"), "LOWP_U": lowp and WU_LOWP in ("u", "wu")}


# Where the state passes get ``v_new = U~ - W S`` from: "off": the w/u kernel writes W and U~ ([T, HV, K + V])
# and the state passes read them; otherwise the state pass forms it in the factored form
# ``T (beta V - (beta exp(G) K) S)`` from T, k and v per chunk (``_vnew_factored``: T and v read instead of W
# and U~, the same bytes, and no w/u launch): "fwd" the forward's state pass; "state" also the backward's
# recompute (its w/u launch then writes W alone, for dhu); "all" also dhu, which forms ``W^T dU`` as
# ``X^T (T^T dU)`` (the backward launches no w/u kernel). Only where the pass runs V blocks of 64 (``fuse_wu``).
# Session 22 (H200, Triton 3.6, gd_switch_ab, same process, benchmarks/results/2026-11-26-s22-h200-round3): forward
# 1.036 -> 0.891 ms (H16-8seqs), 1.089 -> 0.946 (H16-64seqs), 1.118 -> 1.032 (H16-ragged), 2.051 -> 1.789
# (H32-8seqs); H16-1seq runs V blocks of 16 (not fused). The backward lost with "state" (2.87 -> 3.05 ms) and
# "all" (3.59: dhu spills 632 B with the extra products), so the default fused the forward only until session 33.
# Session 33 (H200, src_variant_ab, same process, benchmarks/results/2026-11-27-s33-h200-round4; the factored form
# now scales K S on its narrow side, session 32): "state" backward 2.652 -> 2.591 ms (H16-8seqs), 3.073 -> 3.038
# (H16-ragged), 2.693 -> 2.618 (H16-64seqs): the w/u launch 0.230 -> 0.110 ms (W alone), the recompute +0.05; dv and
# dbeta bitwise, dq / dk / dg moved by rounding (<= 0.5% of their max: W is no longer rounded to bf16 before W S).
# "all" still loses (dhu 0.442 -> 1.055 ms). Default "state" since then. ``chunk_bwd`` decides the recompute's fusion
# from the chains it runs: H16-1seq's 9 segment slots x 16 heads run V blocks of 64 and are fused (round 8: backward
# 3.080 -> 3.020 ms), although its 16 sequence chains alone would give V blocks of 16.
FUSE_WU = env_choice("JAGATTN_GD_FUSE_WU", ("off", "fwd", "state", "all"), "state")
# The narrowest state-pass V block that fuse_wu / fuse_o fuse at (64: narrower ones miscompile at 4 warps, see
# fuse_wu). Lowered only by device experiments that also force another warp count (benchmarks/rounds/).
FUSE_MIN_BV = 64
_FUSED_STAGES = {
    "off": (),
    "fwd": ("fwd_h",),
    "state": ("fwd_h", "bwd_h"),
    "all": ("fwd_h", "bwd_h", "bwd_dhu"),
}


def fuse_wu(stage: str, n_chains, v, k: int, k_row_bytes: int) -> bool:
    """Whether ``stage`` (``"fwd_h"``: the forward's state pass, ``"bwd_h"``: the backward's recompute,
    ``"bwd_dhu"``) forms ``v_new`` (dhu: ``W^T dU``) from T itself (``FUSE_WU``), from shapes only: only
    where that pass launches V blocks of 64 (``launch_config``; ``n_chains`` = sequences x value heads).
    Narrower blocks miscompile on Triton 3.6 (H200, session 22 round 7, forward state pass fused through a
    since-removed switch): at V blocks of 32 (H16-ragged) o came out NaN and differed between two runs, at 16
    (H16-1seq) an illegal memory access; the ``[BT, BT] x [BT, BV]`` product with a narrow right operand is
    the shape ``fwd_o`` / ``dv_local`` miscompile at 4 warps too (``CANDIDATES``). (Round 2's first formulation
    faulted at 16 as well.) The few-chain batches that get such blocks stay unfused. Only for head dims ``k``
    up to 128: the gpu tests run the fused pass at K = V = 128 (bf16 and fp16), none at K = 256 (twice the
    per-thread X and state tiles)."""
    if stage not in _FUSED_STAGES[FUSE_WU] or k > 128:
        return False
    return launch_config(stage, n_programs=n_chains, v=v, k_row_bytes=k_row_bytes)[0] >= FUSE_MIN_BV


# Whether the forward's state pass also writes the output (``FUSE_O``, ``_fused_o``): each
# step forms its chunk's o tile from the state it starts with and its v_new, by the output kernel's arithmetic on the
# same roundings (bitwise its o on the H200), so neither the per-chunk states nor v_new of that sequence are stored
# and the output kernel skips it. "auto" (default): where the pass runs V blocks of 64 (the score tile times a
# narrower v_new tile is the Triton 3.6 miscompile pattern of fwd_o, CANDIDATES; at 32 and 8 warps the fused pass
# faulted too, session 23 round 2) and K rows of at most DEEP_K_ROW_BYTES (bf16 at K <= 128: shared memory of the
# wider rows not measured); "off": never.
#
# Only for sequences of at most ``fuse_o_max_len`` tokens (FUSE_O_MAX_MEAN times the mean, from shapes only): a
# fused step is a longer link of the sequential chain (H200, session 23: ~6.6-7.6 us per chunk against ~3.9-4.8
# unfused), so the longer sequences of a ragged batch run the unfused loop (the pass's own stages) and their o comes
# from the output kernel, launched after the pass (it skips the fused sequences). Session 23, H200, forward ms, off ->
# this (gd_switch_ab, same process): every sequence fused (round 2) H16-8seqs 0.868 -> 0.772, H16-64seqs 0.922 ->
# 0.814, H32-8seqs 1.743 -> 1.558, but H16-ragged (lengths 7017 3255 6309 7392 3545 431 2221 2598) 1.002 -> 1.056
# (its 116-chunk chain 0.448 -> 0.764 ms); two loops at 1.5 x the mean (round 6) 0.870 -> 0.791, 0.926 -> 0.843,
# 1.747 -> 1.585, ragged 1.005 -> 0.931. The suite's H16-ragged draw (2433 5838 6723 1976 4051 5593 6154: all under
# 1.5 x its mean 4681) ran fully fused at 1.5 (round 8: forward 1.074 ms, 1.10x FLA); 1.0 (the default since) leaves
# its four longest to the unfused loop: by the per-chunk times above about 0.93 ms (0.45 pass + 0.19 output kernel +
# 0.29 solve and l2norm), NOT measured (no device time left in session 23). Equal lengths are fused at any value >= 1
# (the bound is rounded up).
FUSE_O = env_choice("JAGATTN_GD_FUSE_O", ("auto", "off"), "auto")
FUSE_O_MAX_MEAN = 1.0


def fuse_o_max_len(t: int, n: int) -> int:
    """The longest sequence (tokens) whose output the fused pass forms: ``FUSE_O_MAX_MEAN`` times the mean
    length ``t / n``, rounded up (a Python int from the shapes; no look at the lengths, so no host sync); -1 (none)
    for symbolic shapes."""
    if not isinstance(t, int) or not isinstance(n, int):
        return -1
    return math.ceil(float(FUSE_O_MAX_MEAN) * t / max(n, 1))


def fuse_o(n_chains, v, k: int, k_row_bytes: int) -> bool:
    """Whether the forward's state pass writes o itself (``FUSE_O``), from shapes only (``n_chains`` =
    sequences x value heads): only at V blocks of 64 and K rows of at most ``DEEP_K_ROW_BYTES``."""
    if FUSE_O == "off" or k > 128 or k_row_bytes > DEEP_K_ROW_BYTES:
        return False
    return launch_config("fwd_h", n_programs=n_chains, v=v, k_row_bytes=k_row_bytes)[0] >= FUSE_MIN_BV


# The backward's recompute of the per-chunk states in segments (``SEG_MODE`` of ``_gated_delta_fwd_h_kernel``):
# the forward (when a backward follows: ``ops.gated_delta_fwd_keep_t``) stores the exact fp32 state entering every
# ``seg_chunks`` -th chunk of each sequence, and the recompute runs one chain per segment instead of per sequence,
# starting from those states. It is the same chain cut into pieces, so the states it recomputes are the ones the
# sequential recompute would get up to rounding (the forward may form v_new in another order, ``FUSE_WU``).
# Where the (sequence, value head) chains leave the GPU short of programs (one 32k-token sequence x 16 heads:
# 32 chains of V blocks of 64), the recompute of the sequential pass starves it; segments give it
# ``T / (64 SEG)`` chains per head. Memory: ``(T // (64 SEG) + N) x HV x K x V`` fp32 kept from the forward to
# the backward (H16, 32k tokens in 1 to 8 sequences, SEG = 32: 17-24 MiB). "auto": ``seg_chunks``' rule; "off";
# or a fixed number of chunks per segment (a power of two up to 64: device A/Bs, and 1-4 for the CPU tests' short
# sequences).
SEG_CHOICES = ("auto", "off", "1", "2", "4", "8", "16", "32", "64")
SEG = env_choice("JAGATTN_GD_SEG", SEG_CHOICES, "auto")


def seg_chunks(t, n, hv, v, device_index: int = 0) -> int:
    """Chunks per segment of the backward's recompute (0: whole sequences), from shapes only; the caller passes it
    to the keep-T forward op as an argument (``ops.chunked_fwd``), so that its fake and the backward agree. "auto"
    segments only where the sequence chains give fewer V-block-64 programs than SMs, and then takes the longest
    power-of-two segment (8 to 64 chunks) whose segment chains (about ``T / (64 seg) x HV``) reach one per SM.
    0 for symbolic shapes (no guard on the sizes).

    H200, session 28 round 1 (``benchmarks/gd_switch_ab.py``, the recompute kernel's ms, off -> 64 / 32 / 16
    chunks): H16-1seq (32 chains) 0.945 -> 0.378 / 0.383 / 0.388, backward 4.205 -> 3.70 ms; H16-8seqs (256
    chains) 0.373 -> 0.444 / 0.439 / 0.451 and H16-ragged 0.485 -> 0.511 at 32: slower, so not segmented."""
    if SEG == "off" or not all(isinstance(x, int) for x in (t, n, hv, v)) or t == 0:
        return 0
    if SEG != "auto":
        return int(SEG)
    vb = triton.cdiv(v, 64)
    target = _num_sms(device_index)
    if n * hv * vb >= target:
        return 0
    seg = 64
    while seg > 8 and (t // (BT * seg)) * hv * vb < target:
        seg //= 2
    return seg


def num_seg_slots(t: int, n: int, seg: int) -> int:
    """Entries of the segment-state buffer: the slot schedule (``common.num_slots``) with segments of ``seg``
    chunks for chunks; 0 without segments."""
    return t // (BT * seg) + n if seg > 0 else 0


def state_pass_chains(t: int, n: int, seg: int, from_segments: bool) -> int:
    """Chains (program rows per value head) of ``_state_pass``: one per segment slot when it starts from the
    forward's segment states (the backward's recompute with ``hseg``), else one per sequence. The launch's V block
    and ``fuse_wu``'s decision for that pass both follow from this count."""
    return num_seg_slots(t, n, seg) if seg > 0 and from_segments else n


def _h_row_bytes(k, v) -> int:
    """``k_row_bytes`` of the state pass's ``launch_config`` (K times the wider of k's and the states' sizes)."""
    return k.shape[2] * max(k.element_size(), inter_dtype(k.dtype, "h", k.shape[0], v.shape[1]).itemsize)


def _launch_on(stream, kernel, grid, *args, **kwargs) -> None:
    """``launch`` on the current stream, or on ``stream`` after it has waited for the current stream's work so far:
    every allocation before the call included (with JAGATTN_POISON they are NaN fills on the current stream, which
    the side stream must not overtake; session 49: waiting before them raced, 3 gpu tests failed at random)."""
    if stream is None:
        launch(kernel, grid, *args, **kwargs)
        return
    stream.wait_stream(torch.cuda.current_stream(stream.device))
    with torch.cuda.stream(stream):
        launch(kernel, grid, *args, **kwargs)


def _state_pass(
    k, w, u, gc, initial_state, cu, *, in_dtype, store_final: bool, dhbuf=None, rk=None, dhlo=None, dh_f16=False,
    fused=None, out=None, seg: int = 0, hseg=None, hs=None, stream=None, stage: str = "fwd_h",
):  # fmt: skip
    """The state pass (``_gated_delta_fwd_h_kernel``) over ``w``, ``u`` from ``_prepare``, or with ``fused =
    (v, beta, T^-1)`` and ``w = u = None`` forming v_new from T per chunk itself (``FUSE_WU``). ``out = (q, rq, o,
    scale, max_len)`` (``FUSE_O``, forward only; ``rq`` None or q's l2norm factors): the pass writes the output
    ``o`` of the sequences of at most ``max_len`` tokens itself and stores per-chunk states and v_new only for the
    others.

    ``seg > 0`` (``seg_chunks``): without ``hseg`` (the forward) the pass also stores the fp32 state entering every
    ``seg``-th chunk into a new ``[num_seg_slots, HV, K, V]`` buffer, returned as a fifth value; with ``hseg``
    (the backward's recompute, ``initial_state`` unused) it runs one chain per segment from those states.

    ``hs`` (``[ns * HV * K * V // 16]`` fp32, V a multiple of 16; the backward's recompute beside dhu,
    ``chunk_bwd.OVERLAP``): the per-chunk states go to an fp16 ``hbuf`` as quotients by a power-of-two scale per
    16 elements of a row, the scales to ``hs`` (``common._pow2_groups16``). ``stream`` (a CUDA stream): the
    buffers are allocated on the current stream, ``stream`` waits for the current stream's work so far (those
    allocations included) and the pass is launched on it; the caller joins it. ``stage``: ``"bwd_h"`` for the
    backward's recompute (its ``launch_config`` name: the rule of ``"fwd_h"``, a config override of its own).
    Returns ``(hbuf, vnew, final, gh)`` or ``(hbuf, vnew, final, gh, hseg)``."""
    t, h, dk = k.shape
    if fused is not None:
        v, beta, ainv = fused
        w = new_empty((0,), dtype=inter_dtype(k.dtype, "w", t, v.shape[1]), device=k.device)
        u = new_empty((0,), dtype=inter_dtype(k.dtype, "u", t, v.shape[1]), device=k.device)
        hv, dv = v.shape[1], v.shape[2]
        wu_prec = dot_precision(in_dtype, "wu")
    else:
        hv, dv = u.shape[1], u.shape[2]
        wu_prec = "ieee"
    n = cu.shape[0] - 1
    ns = num_slots(t, n)
    dev = k.device
    h_f16 = hs is not None
    if h_f16 and (dv % 16 or hs.numel() != ns * hv * dk * dv // 16):
        raise ValueError(
            f"_state_pass: hs needs V % 16 == 0 and {ns * hv * dk * dv // 16} elements (V = {dv})"
        )
    hbuf = new_empty(
        (ns, hv, dk, dv), dtype=torch.float16 if h_f16 else inter_dtype(k.dtype, "h", t, hv), device=dev
    )
    ng = triton.cdiv(dv, 16)
    # one partial sum per V block of the autotuned width (>= 16); unused entries stay 0
    gh = torch.zeros((ns, hv, ng) if dhbuf is not None else (0,), dtype=torch.float32, device=dev)
    vnew = new_empty((t, hv, dv), dtype=inter_dtype(k.dtype, "vnew", t, hv), device=dev)
    q_o, rq_o, o_o, scale_o, o_max_len = out if out is not None else (gc, None, gc, 1.0, -1)
    final = new_empty((n, hv, dk, dv) if store_final else (0,), dtype=torch.float32, device=dev)
    seg_mode = 0 if seg == 0 else 2 if hseg is not None else 1
    if seg_mode == 1:
        # zeros: the slots past a sequence's last segment are never written (nor read), and a custom op's output
        # must not depend on uninitialised memory (opcheck compares two runs; round 2: it differed)
        hseg = torch.zeros((num_seg_slots(t, n, seg), hv, dk, dv), dtype=torch.float32, device=dev)
    elif seg_mode == 2 and (
        hseg.shape[0] != num_seg_slots(t, n, seg) or tuple(hseg.shape[1:]) != (hv, dk, dv)
    ):
        raise ValueError(
            f"seg_states: the segment states have shape {tuple(hseg.shape)}, expected "
            f"{(num_seg_slots(t, n, seg), hv, dk, dv)} for {seg} chunks per segment"
        )
    chains = state_pass_chains(t, n, seg, seg_mode == 2)
    if n > 0:
        row_bytes = _h_row_bytes(k, u if fused is None else fused[0])
        bv, warps, stages = launch_config(stage, n_programs=chains * hv, v=dv, k_row_bytes=row_bytes)
        o_stages = stages
        if out is not None:
            # the fused output's (BV, warps, stages); the long sequences' loop keeps ``stages``
            bv, warps, o_stages = launch_config("fwd_h_o", n_programs=n * hv, v=dv, k_row_bytes=row_bytes)
        _launch_on(
            stream,
            _gated_delta_fwd_h_kernel,
            (triton.cdiv(dv, bv), chains * hv),
            k,
            k if rk is None else rk,
            w,
            u,
            fused[0] if fused is not None else u,
            fused[1] if fused is not None else gc,
            fused[2] if fused is not None else gc,
            gc,
            initial_state if initial_state is not None else gc,
            final,
            hbuf,
            vnew,
            dhbuf if dhbuf is not None else gc,
            dhlo if dhlo is not None else gc,
            gh,
            q_o,
            q_o if rq_o is None else rq_o,
            o_o,
            cu,
            n,
            scale_o,
            o_max_len,
            H=h,
            HV=hv,
            K=dk,
            V=dv,
            BT=BT,
            BK=block_k(dk),
            BV=bv,
            NG=ng,
            USE_INITIAL_STATE=initial_state is not None,
            STORE_FINAL_STATE=store_final,
            COMPUTE_GH=dhbuf is not None,
            DOT_PREC=dot_precision(in_dtype, "fwd_h"),
            KEEP=keep_fp32(in_dtype, "fwd_h", t, hv),
            EXACT_EXP=exact_exp(k.dtype),
            NORM=rk is not None,
            PREFETCH=state_prefetch("fwd_h" if dhbuf is None else "fwd_h_recompute"),
            DH_SPLIT=2 if dh_f16 else dhlo is not None,
            FUSE_WU=fused is not None,
            WU_PREC=wu_prec,
            FUSE_O=out is not None,
            O_PREC=dot_precision(in_dtype, "fwd_o"),
            O_KEEP=keep_fp32(in_dtype, "fwd_o", t, hv),
            O_STAGES=o_stages,
            STAGES=stages,
            HSEG=hseg if hseg is not None else gc,
            SEG=seg,
            SEG_MODE=seg_mode,
            HS=hs if h_f16 else gc,
            H_F16=h_f16,
            num_warps=warps,
            num_stages=stages,
        )
    if seg_mode == 1:
        return hbuf, vnew, final, gh, hseg
    return hbuf, vnew, final, gh


def chunk_fwd(
    q, k, v, g, beta, initial_state, cu, scale: float, keep_t: str | None = None, rstd=None, norm_k_out=None,
    seg: int = 0,
):  # fmt: skip
    """Forward of the chunked gated delta rule on prepared inputs (l2norm already applied, or
    ``rstd = (rq, rk)``: q's and k's ``[T, H]`` fp32 l2norm factors, applied on load).

    Shapes: q, k ``[T, H, K]``; v ``[T, HV, V]``; g, beta ``[T, HV]``; initial_state
    ``[N, HV, K, V]`` fp32 or None; cu ``[N+1]``. ``norm_k_out = (kn, rk)``: k arrives raw and the solve
    kernel L2-normalises it into these buffers (``_prepare``; ops ``KKT_NORM``), q arrives normalised. Returns ``(o [T, HV, V], final [N, HV, K, V] fp32)``;
    with ``keep_t`` ("fp32" or "input", opt-in ``ops.SAVE_T``) also ``(gc [T, HV] fp32, T^-1
    [T, HV, BT])`` for the backward, T^-1 in fp32 or rounded to k's dtype, and (with ``keep_t``) the segment
    states of ``seg`` chunks per segment (``seg_chunks``; ``[0]`` when ``seg`` is 0) for the backward's recompute.
    """
    t, h, dk = q.shape
    hv, dv = v.shape[1], v.shape[2]
    n = cu.shape[0] - 1
    rq, rk = rstd if rstd is not None else (None, None)
    fuse = fuse_wu("fwd_h", n * hv, dv, dk, _h_row_bytes(k, v))
    gc, ainv, w, u = _prepare(k, v, g, beta, cu, rk=rk, wu=not fuse, norm_out=norm_k_out)
    if norm_k_out is not None:
        k = norm_k_out[0]
    o = new_empty((t, hv, dv), dtype=v.dtype, device=v.device)
    with_o = fuse_o(n * hv, dv, dk, _h_row_bytes(k, v))
    o_max_len = fuse_o_max_len(t, n) if with_o else -1
    seg = seg if keep_t is not None else 0
    hbuf, vnew, final, _, *hseg = _state_pass(
        k, w, u, gc, initial_state, cu, in_dtype=v.dtype, store_final=True, rk=rk,
        fused=(v, beta, ainv) if fuse else None, out=(q, rq, o, scale, o_max_len) if with_o else None, seg=seg,
    )  # fmt: skip
    hseg = hseg[0] if hseg else new_empty((0,), dtype=torch.float32, device=v.device)
    if keep_t == "input":
        ainv = ainv.to(k.dtype)
    ns = num_slots(t, n)
    if ns > 0:
        bv, warps, stages = launch_config(
            "fwd_o", n_programs=ns * hv, v=dv, k_row_bytes=dk * max(k.element_size(), hbuf.element_size())
        )
        launch(
            _gated_delta_fwd_o_kernel,
            (ns, hv, triton.cdiv(dv, bv)),
            q,
            k,
            q if rq is None else rq,
            k if rk is None else rk,
            vnew,
            hbuf,
            gc,
            o,
            cu,
            n,
            scale,
            o_max_len,
            H=h,
            HV=hv,
            K=dk,
            V=dv,
            BT=BT,
            BK=block_k(dk),
            BV=bv,
            DOT_PREC=dot_precision(v.dtype, "fwd_o"),
            KEEP=keep_fp32(v.dtype, "fwd_o", t, hv),
            EXACT_EXP=exact_exp(q.dtype),
            NORM=rq is not None,
            num_warps=warps,
            num_stages=stages,
        )
    if keep_t is not None:
        return o, final, gc, ainv, hseg
    return o, final
