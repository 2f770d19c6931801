"""Chunked gated delta rule, backward kernels and launchers (chunk ``BT = 64``).

Nothing is saved by the forward but its inputs: the backward recomputes G, T = (I + A)^-1, W, U~
(``prepare``), the per-chunk states and U (``h``), then, per chunk with ``dS`` the gradient of the
state leaving the chunk (notation of ``chunk_fwd.py``)::

    dU  = scale ((Q K^T) * Gamma)^T dO + (exp(G_last - G) * K) dS        ("local dv" + dhu)
    dS0 = exp(G_last) dS + scale (exp(G) * Q)^T dO - W^T dU               (bwd_dhu, in reverse)
    dQ  = scale exp(G) * (dO S0^T) + scale ((dO U^T) * Gamma) K
    dK  = scale ((dO U^T) * Gamma)^T Q + exp(G_last - G) * (U dS^T) + WY terms
    dW  = -dU S0^T ;  dT = dW X^T + dU Y^T  (X = beta exp(G) K, Y = beta V) ;  dA = -T^T dT T^T
    dV  = beta * (T^T dU) ;  dbeta, dG from X, Y and A ;  dg = reverse cumsum of dG in the chunk

Kernels: ``dv_local`` (per chunk), ``dhu`` (sequential in reverse, per sequence, head and V block),
``dqkwg`` (per chunk, head and key block, loops over V; the gate gradient as one partial sum per key
block; also ``dW = -dU S0^T`` from the states it loads anyway, stored in the intermediate dtype) and
``wy`` (per chunk and head, over column tiles: the WY backward from dW and dU, the sum of the partial
gate gradients and its reverse cumsum). dq/dk are produced per value head in fp32 (dq in bf16 for bf16
inputs without GVA) and summed over the GVA group.
Every transposed operand of a ``tl.dot`` is a loaded tensor (see ``common.py``); where a product is
needed transposed (``M^T K``, ``dPm^T Q``), the transpose of the swapped product is taken after the dot
and only added to an accumulator.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from ..._core.alloc import new_empty
from ..._core.env import env_choice
from ..._core.launch import _tracing, launch
from . import chunk_fwd
from .chunk_fwd import _prepare, _state_pass
from .common import (
    BT,
    _c,
    _chunk_of,
    _chunk_of_slot,
    _chunk_of_tab,
    _dot_f32_lhs,
    _dot_lhs_f32_rhs,
    _exp,
    _l2n,
    _num_sms,
    _pow2_groups16,
    _pow2_rows,
    _times_groups16,
    block_k,
    chunk_table,
    dot_precision,
    exact_exp,
    inter_dtype,
    keep_fp32,
    launch_config,
    num_slots,
    state_prefetch,
)

# ---------------------------------------------------------------------------------------------
# local dv: scale ((Q K^T) * Gamma)^T dO


@triton.jit
def _gated_delta_bwd_dv_local_kernel(
    Q,
    K_,
    RQ,
    RK,
    GC,
    DO,
    DU,
    CU,
    N,
    scale,
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
    scale = tl.cast(scale, tl.float32)  # Inductor passes Python floats as fp64 scalars
    i_s, row0, eos = _chunk_of_slot(CU, N, BT)
    if row0 >= eos:
        return
    i_hv = tl.program_id(1)
    i_v = tl.program_id(2)
    i_h = i_hv // (HV // H)
    o_t = tl.arange(0, BT)
    rows = (row0 + o_t).to(tl.int64)
    m_t = (row0 + o_t) < eos
    o_k = tl.arange(0, BK)
    m_k = o_k < K
    o_v = i_v * BV + tl.arange(0, BV)
    m_v = o_v < V

    p_qk = (rows[:, None] * H + i_h) * K + o_k[None, :]
    b_q = _l2n(tl.load(Q + p_qk, mask=m_t[:, None] & m_k[None, :], other=0.0), RQ, rows, m_t, i_h, H, NORM)
    b_k = _l2n(tl.load(K_ + p_qk, mask=m_t[:, None] & m_k[None, :], other=0.0), RK, rows, m_t, i_h, H, NORM)
    b_g = tl.load(GC + rows * HV + i_hv, mask=m_t, other=0.0)
    # [s, t]: key row s, query row t >= s
    b_kq = tl.dot(b_k, tl.trans(b_q), input_precision=DOT_PREC)
    causal_t = (o_t[None, :] >= o_t[:, None]) & m_t[None, :]
    b_pt = (
        tl.where(causal_t, b_kq * _exp(tl.where(causal_t, b_g[None, :] - b_g[:, None], 0.0), EXACT_EXP), 0.0)
        * scale
    )
    p_v = (rows[:, None] * HV + i_hv) * V + o_v[None, :]
    m_tv = m_t[:, None] & m_v[None, :]
    b_do = tl.load(DO + p_v, mask=m_tv, other=0.0)
    tl.store(DU + p_v, _dot_f32_lhs(b_pt, b_do, DOT_PREC, KEEP), mask=m_tv)


# ---------------------------------------------------------------------------------------------
# the backward state recurrence


@triton.jit
def _gated_delta_bwd_dhu_kernel(
    Q,
    K_,
    RQ,
    RK,
    W,
    BETA,
    AINV,
    GC,
    DO,
    DUL,
    DU,
    DHT,
    DH0,
    DHBUF,
    DHLO,
    CU,
    N,
    scale,
    H: tl.constexpr,
    HV: tl.constexpr,
    K: tl.constexpr,
    V: tl.constexpr,
    BT: tl.constexpr,
    BK: tl.constexpr,
    BV: tl.constexpr,
    USE_FINAL_STATE_GRADIENT: tl.constexpr,
    STORE_DH0: tl.constexpr,
    DOT_PREC: tl.constexpr,
    KEEP: tl.constexpr,
    EXACT_EXP: tl.constexpr,
    NORM: tl.constexpr,
    FUSE_DV: tl.constexpr,
    PREFETCH: tl.constexpr,
    DH_SPLIT: tl.constexpr,
    FUSE_W: tl.constexpr,
    WU_PREC: tl.constexpr,
):
    """The backward state recurrence, last chunk first: per chunk stores dS (DHBUF), forms the full
    ``dU = dU_local + exp(G_last - G) K dS`` (DU) and steps ``dS``. ``dU_local`` (the intra-chunk
    ``P^T dO``) is read from DUL (written by ``dv_local``), or with ``FUSE_DV`` (chosen by
    ``_fuse_dv``) computed here from the q, k, dO tiles the step loads anyway (dv_local's operations): no
    fp32 ``[T, HV, V]`` buffer, its write and read, nor a second read of q, k, dO.

    ``FUSE_W`` (``chunk_fwd.fuse_wu("bwd_dhu", ...)``): ``W^T dU`` as ``X^T (T^T dU)`` with ``X = beta exp(G) K``
    from T (AINV), beta, the gates and the k tile the step loads anyway (``T^T dU`` at the w/u kernel's
    precision ``WU_PREC``), instead of W read from memory (``W`` is then an empty tensor)."""
    scale = tl.cast(scale, tl.float32)  # Inductor passes Python floats as fp64 scalars
    i_v = tl.program_id(0)
    i_nh = tl.program_id(1)
    i_n = i_nh // HV
    i_hv = i_nh % HV
    i_h = i_hv // (HV // H)
    bos = tl.load(CU + i_n).to(tl.int32)
    eos = tl.load(CU + i_n + 1).to(tl.int32)
    n_chunks = tl.cdiv(eos - bos, BT)
    slot0 = bos // BT + i_n
    o_k = tl.arange(0, BK)
    o_v = i_v * BV + tl.arange(0, BV)
    m_k = o_k < K
    m_v = o_v < V
    m_kv = m_k[:, None] & m_v[None, :]
    o_kv = o_k[:, None] * V + o_v[None, :]
    dt = Q.dtype.element_ty

    p_state = (i_n * HV + i_hv).to(tl.int64) * K * V
    if USE_FINAL_STATE_GRADIENT:
        b_dh = tl.load(DHT + p_state + o_kv, mask=m_kv, other=0.0).to(tl.float32)
    else:
        b_dh = tl.zeros([BK, BV], dtype=tl.float32)
    o_t0 = tl.arange(0, BT)
    if PREFETCH:
        # the gates (loads that feed no dot directly) are issued one chunk ahead, as in fwd_h
        # (an empty sequence loads nothing: its rows "before" bos belong to another sequence, or are < 0)
        row_l = bos + (n_chunks - 1) * BT
        m_l = o_t0 < tl.where(n_chunks > 0, eos - row_l, 0)
        b_g_nx = tl.load(GC + (row_l + o_t0).to(tl.int64) * HV + i_hv, mask=m_l, other=0.0)
        g_last_nx = tl.load(GC + (eos - 1).to(tl.int64) * HV + i_hv, mask=eos > bos, other=0.0)
    for i in range(0, n_chunks):
        i_t = n_chunks - 1 - i
        row0 = bos + i_t * BT
        rows = (row0 + o_t0).to(tl.int64)
        m_t = (row0 + o_t0) < eos
        last = (tl.minimum(row0 + BT, eos) - 1).to(tl.int64)
        # the slot index in int32 (< 2^31 for any dS buffer that fits a GPU), one int64 product: the int64 chain
        # ((slot0 + i_t).to(int64) * HV + i_hv) * K * V kept three spilled registers reloaded at every step's top
        # (Nsight Compute, session 24: 12% of dhu's stall samples); H200 session 25: 0.472 -> 0.442 ms, bitwise
        o_dh = ((slot0 + i_t) * HV + i_hv).to(tl.int64) * (K * V) + o_kv
        p_dh = DHBUF + o_dh
        if DH_SPLIT == 2:
            # DH_F16: dS as fp16 with a power-of-two scale per row and 16 columns (DHLO[element // 16])
            b_dhs, b_ps = _pow2_groups16(b_dh, BK, BV)
            tl.store(p_dh, b_dhs.to(DHBUF.dtype.element_ty), mask=m_kv)
            o_g16 = i_v * BV + 16 * tl.arange(0, BV // 16)
            o_s = (
                ((slot0 + i_t) * HV + i_hv).to(tl.int64) * (K * V) + o_k[:, None] * V + o_g16[None, :]
            ) // 16
            tl.store(DHLO + o_s, b_ps, mask=m_k[:, None] & (o_g16 < V)[None, :])
        elif DH_SPLIT:
            # dS as bf16 hi + lo: dqkwg reads the hi part only (what it rounds dS to anyway), the
            # recompute's gate sums hi + lo (~16 mantissa bits)
            b_dh_hi = b_dh.to(DHBUF.dtype.element_ty)
            tl.store(p_dh, b_dh_hi, mask=m_kv)
            tl.store(DHLO + o_dh, (b_dh - b_dh_hi.to(tl.float32)).to(DHLO.dtype.element_ty), mask=m_kv)
        else:
            tl.store(p_dh, b_dh.to(DHBUF.dtype.element_ty), mask=m_kv)

        if PREFETCH:
            b_g = b_g_nx
            g_last = g_last_nx
            # the previous chunk (full, since only a sequence's last chunk can be partial); for the
            # first chunk the loads are masked off / re-read row bos
            m_t_nx = o_t0 < tl.where(i_t > 0, BT, 0)
            b_g_nx = tl.load(GC + (rows - BT) * HV + i_hv, mask=m_t_nx, other=0.0)
            g_last_nx = tl.load(GC + tl.maximum(row0 - 1, bos).to(tl.int64) * HV + i_hv)
        else:
            b_g = tl.load(GC + rows * HV + i_hv, mask=m_t, other=0.0)
            g_last = tl.load(GC + last * HV + i_hv)
        m_tk = m_t[:, None] & m_k[None, :]
        p_qk = (rows[:, None] * H + i_h) * K + o_k[None, :]
        b_k = _l2n(tl.load(K_ + p_qk, mask=m_tk, other=0.0), RK, rows, m_t, i_h, H, NORM)
        p_v = (rows[:, None] * HV + i_hv) * V + o_v[None, :]
        m_tv = m_t[:, None] & m_v[None, :]
        if FUSE_DV:
            b_kd = _c(b_k.to(tl.float32) * _exp(g_last - b_g, EXACT_EXP)[:, None], dt, DOT_PREC, KEEP)
            b_q = _l2n(tl.load(Q + p_qk, mask=m_tk, other=0.0), RQ, rows, m_t, i_h, H, NORM)
            b_do = tl.load(DO + p_v, mask=m_tv, other=0.0)
            # dv_local's P^T dO: [s, t] key row s, query row t >= s
            b_kq = tl.dot(b_k, tl.trans(b_q), input_precision=DOT_PREC)
            causal_t = (o_t0[None, :] >= o_t0[:, None]) & m_t[None, :]
            b_pt = (
                tl.where(
                    causal_t,
                    b_kq * _exp(tl.where(causal_t, b_g[None, :] - b_g[:, None], 0.0), EXACT_EXP),
                    0.0,
                )
                * scale
            )
            b_dul = _dot_f32_lhs(b_pt, b_do, DOT_PREC, KEEP)
            b_du = b_dul + tl.dot(b_kd, _c(b_dh, dt, DOT_PREC, KEEP), input_precision=DOT_PREC)
        else:
            # the decay exp(G_last - G) after the product, on the [BT, BV] tile (and exp(G) scale on dO below): k and q
            # feed their dots straight from the pipelined buffers, no scaling pass over two [BT, K] tiles per step.
            # H200 session 32 (src_variant_ab, benchmarks/rounds/s32_gd_variants.py "narrow"): H16-1seq's dhu 1.319
            # -> 0.752 ms; with FUSE_DV (V blocks of 64) the same change was slower (H16-8seqs 0.441 -> 0.550 ms,
            # H16-ragged 0.679 -> 0.792), so that path keeps the scaled tiles
            b_dul = tl.load(DUL + p_v, mask=m_tv, other=0.0)
            b_du = (
                b_dul
                + tl.dot(_c(b_k, dt, DOT_PREC, KEEP), _c(b_dh, dt, DOT_PREC, KEEP), input_precision=DOT_PREC)
                * tl.where(m_t, _exp(g_last - b_g, EXACT_EXP), 0.0)[:, None]
            )
        tl.store(DU + p_v, b_du.to(DU.dtype.element_ty), mask=m_tv)

        if not FUSE_DV:  # (the order of the loads before FUSE_DV existed)
            b_q = _l2n(tl.load(Q + p_qk, mask=m_tk, other=0.0), RQ, rows, m_t, i_h, H, NORM)
        if FUSE_W:
            # W^T dU = X^T (T^T dU), X = beta exp(G) K: T loaded, dU a dot result used untransposed
            b_a = tl.load(
                AINV + (rows[:, None] * HV + i_hv) * BT + o_t0[None, :], mask=m_t[:, None], other=0.0
            ).to(tl.float32)
            b_beta = tl.load(BETA + rows * HV + i_hv, mask=m_t, other=0.0).to(tl.float32)
            b_x = b_k.to(tl.float32) * tl.where(m_t, b_beta * _exp(b_g, EXACT_EXP), 0.0)[:, None]
            b_qd = _c(b_q.to(tl.float32) * (_exp(b_g, EXACT_EXP) * scale)[:, None], dt, DOT_PREC, KEEP)
            if not FUSE_DV:
                b_do = tl.load(DO + p_v, mask=m_tv, other=0.0)
            b_tdu = tl.dot(tl.trans(b_a), b_du, input_precision=WU_PREC)
            b_dh = (
                b_dh * _exp(g_last, EXACT_EXP)
                + tl.dot(tl.trans(b_qd), _c(b_do, dt, DOT_PREC, KEEP), input_precision=DOT_PREC)
                - tl.dot(
                    tl.trans(_c(b_x, dt, DOT_PREC, KEEP)),
                    _c(b_tdu, dt, DOT_PREC, KEEP),
                    input_precision=DOT_PREC,
                )
            )
        else:
            # (the unfused step exactly as before FUSE_W: computing W^T dU ahead of the dQ^T dO product
            # instead, in session 22, made this kernel 0.468 -> 0.607 ms on H16-8seqs, H200)
            b_w = tl.load(W + (rows[:, None] * HV + i_hv) * K + o_k[None, :], mask=m_tk, other=0.0)
            if FUSE_DV:
                b_qd = _c(b_q.to(tl.float32) * (_exp(b_g, EXACT_EXP) * scale)[:, None], dt, DOT_PREC, KEEP)
                b_dos = _c(b_do, dt, DOT_PREC, KEEP)
            else:
                # Q^T (exp(G) scale dO): the gate on the [BT, BV] side, q straight into its dot
                b_qd = _c(b_q, dt, DOT_PREC, KEEP)
                b_do = tl.load(DO + p_v, mask=m_tv, other=0.0)
                b_dos = _c(b_do.to(tl.float32) * (_exp(b_g, EXACT_EXP) * scale)[:, None], dt, DOT_PREC, KEEP)
            b_dh = (
                b_dh * _exp(g_last, EXACT_EXP)
                + tl.dot(tl.trans(b_qd), b_dos, input_precision=DOT_PREC)
                - tl.dot(
                    tl.trans(_c(b_w, dt, DOT_PREC, KEEP)),
                    _c(b_du, dt, DOT_PREC, KEEP),
                    input_precision=DOT_PREC,
                )
            )
    if STORE_DH0:
        tl.store(DH0 + p_state + o_kv, b_dh, mask=m_kv)


# ---------------------------------------------------------------------------------------------
# dq, dk (output and state terms) and the gate terms


@triton.jit
def _gated_delta_bwd_dqkwg_kernel(
    Q,
    K_,
    RQ,
    RK,
    VNEW,
    HBUF,
    DHBUF,
    GH,
    GC,
    DO,
    DU,
    DQ,
    DK,
    DW,
    DG,
    DKS,
    DHS,
    HS,
    CU,
    TAB,
    N,
    TH,
    scale,
    H: tl.constexpr,
    HV: tl.constexpr,
    K: tl.constexpr,
    V: tl.constexpr,
    BT: tl.constexpr,
    BK: tl.constexpr,
    BV: tl.constexpr,
    NG: tl.constexpr,
    BG: tl.constexpr,
    NKB: tl.constexpr,
    DOT_PREC: tl.constexpr,
    KEEP: tl.constexpr,
    EXACT_EXP: tl.constexpr,
    NORM: tl.constexpr,
    USE_TAB: tl.constexpr,
    DK_F16: tl.constexpr = False,
    DH_F16: tl.constexpr = False,
    H_F16: tl.constexpr = False,
    GSUM: tl.constexpr = False,
):
    """dq, dk, -dW and the partial gate gradients of one (chunk, value head, key block). ``GSUM``
    (``chunk_bwd.OVERLAP``): the state term of the gate gradient, ``sum(S0 * dS)`` over this key block's rows, is
    formed here from the per-chunk states (HBUF: fp32, or with ``H_F16`` fp16 quotients times HS's scales) and
    dS, instead of read from the recompute's GH; each key block adds its own part to its partial."""
    scale = tl.cast(scale, tl.float32)  # Inductor passes Python floats as fp64 scalars
    # key block (dq/dk columns and a partial gate gradient) fastest: the NKB programs of one chunk read the
    # same dO / v_new / dU tiles, from L2 when they run together (with the key block as the slowest grid
    # dimension each of them came from DRAM once per key block; session 18)
    if USE_TAB:
        i_s, row0, eos = _chunk_of_tab(TAB, tl.program_id(0) // NKB)
    else:
        i_s, row0, eos = _chunk_of(CU, N, BT, tl.program_id(0) // NKB)
    if row0 >= eos:
        return
    i_hv = tl.program_id(1)
    i_kb = tl.program_id(0) % NKB
    i_h = i_hv // (HV // H)
    o_t = tl.arange(0, BT)
    rows = (row0 + o_t).to(tl.int64)
    m_t = (row0 + o_t) < eos
    last = (tl.minimum(row0 + BT, eos) - 1).to(tl.int64)
    o_k = i_kb * BK + tl.arange(0, BK)
    m_k = o_k < K
    dt = Q.dtype.element_ty
    p_state = (i_s.to(tl.int64) * HV + i_hv) * K * V

    b_dp = tl.zeros([BT, BT], dtype=tl.float32)  # [t, s] dO_t . U_s
    b_dq = tl.zeros([BT, BK], dtype=tl.float32)
    b_dk = tl.zeros([BT, BK], dtype=tl.float32)
    b_dw = tl.zeros([BT, BK], dtype=tl.float32)  # -dW = dU S0^T, for the WY backward
    b_gs = tl.zeros([BK], dtype=tl.float32)  # GSUM: sum(S0 * dS) per row of this key block
    for i_v in range(tl.cdiv(V, BV)):
        o_v = i_v * BV + tl.arange(0, BV)
        m_v = o_v < V
        p_v = (rows[:, None] * HV + i_hv) * V + o_v[None, :]
        m_tv = m_t[:, None] & m_v[None, :]
        b_do = tl.load(DO + p_v, mask=m_tv, other=0.0)
        b_vn = tl.load(VNEW + p_v, mask=m_tv, other=0.0)
        o_kv = o_k[:, None] * V + o_v[None, :]
        m_kv = m_k[:, None] & m_v[None, :]
        b_h = tl.load(HBUF + p_state + o_kv, mask=m_kv, other=0.0)
        b_dh = tl.load(DHBUF + p_state + o_kv, mask=m_kv, other=0.0)
        if DH_F16:  # fp16 times its scale per 16 elements of a row (dhu)
            b_dh = _times_groups16(b_dh, DHS, p_state, o_k, i_v * BV, m_k, V, BK, BV)
        if H_F16:  # the same form of S0 (the recompute beside dhu)
            b_h = _times_groups16(b_h, HS, p_state, o_k, i_v * BV, m_k, V, BK, BV)
        if GSUM:
            b_gs += tl.sum(b_h.to(tl.float32) * b_dh.to(tl.float32), 1)
        b_h = _c(b_h, dt, DOT_PREC, KEEP)
        b_dh = _c(b_dh, dt, DOT_PREC, KEEP)
        b_do = _c(b_do, dt, DOT_PREC, KEEP)
        b_vn = _c(b_vn, dt, DOT_PREC, KEEP)
        b_dp += tl.dot(b_do, tl.trans(b_vn), input_precision=DOT_PREC)
        b_dq += tl.dot(b_do, tl.trans(b_h), input_precision=DOT_PREC)
        b_dk += tl.dot(b_vn, tl.trans(b_dh), input_precision=DOT_PREC)
        b_du = _c(tl.load(DU + p_v, mask=m_tv, other=0.0), dt, DOT_PREC, KEEP)
        b_dw += tl.dot(b_du, tl.trans(b_h), input_precision=DOT_PREC)

    p_qk = (rows[:, None] * H + i_h) * K + o_k[None, :]
    m_tk = m_t[:, None] & m_k[None, :]
    b_q = _l2n(tl.load(Q + p_qk, mask=m_tk, other=0.0), RQ, rows, m_t, i_h, H, NORM)
    b_k = _l2n(tl.load(K_ + p_qk, mask=m_tk, other=0.0), RK, rows, m_t, i_h, H, NORM)
    b_g = tl.load(GC + rows * HV + i_hv, mask=m_t, other=0.0)
    g_last = tl.load(GC + last * HV + i_hv)

    # inter-chunk terms: o += scale exp(G) q S0 ;  S_next = ... + exp(G_last - G) k u^T
    b_dq = b_dq * (_exp(b_g, EXACT_EXP) * scale)[:, None]
    b_dk = b_dk * tl.where(m_t, _exp(g_last - b_g, EXACT_EXP), 0.0)[:, None]
    # the last row's term (exp(G_last - G_last) = 1) enters dG_last twice with opposite signs: left out of both, so
    # no O(1) pair cancels to fp32 rounding where dg itself is O(e^g) (strongly negative gates)
    b_kdk = tl.where(rows == last, 0.0, tl.sum(b_dk * b_k.to(tl.float32), 1))
    b_dg = tl.sum(b_dq * b_q.to(tl.float32), 1) - b_kdk
    o_g = tl.arange(0, BG)
    m_g = (o_g < NG) & ((o_g * 0 + i_kb) == 0)  # the state term once, in the first key block's partial
    if GSUM:
        dg_last = _exp(g_last, EXACT_EXP) * tl.sum(b_gs, 0) + tl.sum(b_kdk, 0)
    else:
        b_gh = tl.load(GH + (i_s.to(tl.int64) * HV + i_hv) * NG + o_g, mask=m_g, other=0.0)
        dg_last = _exp(g_last, EXACT_EXP) * tl.sum(b_gh, 0) + tl.sum(b_kdk, 0)

    # intra-chunk terms; with a key block, P is this block's part of Q K^T (the gate term is linear in
    # it: partial sums add up). dK's term dPm^T Q is the transpose of Q^T dPm: a transposed dot result
    # that is only added, never fed to another dot (see ``common.py``)
    causal = (o_t[:, None] >= o_t[None, :]) & m_t[:, None]
    e_ts = _exp(tl.where(causal, b_g[:, None] - b_g[None, :], 0.0), EXACT_EXP)
    # P only feeds the gate term below, which leaves out the diagonal: G_t - G_s counts + for the row t and - for
    # the column s, so at t = s its two O(1) copies cancel exactly, and in fp32 their rounding was larger than dg
    # under strongly negative gates. The strict mask is folded into P's select (bitwise the same as a second select
    # on dP * P; H200 fwd+bwd 3.31-3.33 vs 3.35 ms on H16-8seqs, equal on H16-1seq; session 46)
    strict = (o_t[:, None] > o_t[None, :]) & m_t[:, None]
    b_p = tl.where(strict, tl.dot(b_q, tl.trans(b_k), input_precision=DOT_PREC) * e_ts, 0.0) * scale
    b_dpm = tl.where(causal, b_dp * e_ts, 0.0) * scale
    b_dq += _dot_f32_lhs(b_dpm, b_k, DOT_PREC, KEEP)
    b_dk += tl.trans(_dot_lhs_f32_rhs(tl.trans(b_q), b_dpm, DOT_PREC, KEEP))
    b_dpp = b_dp * b_p
    b_dg += tl.sum(b_dpp, 1) - tl.sum(b_dpp, 0)
    b_dg += tl.where(rows == last, dg_last, 0.0)

    p_out = (rows[:, None] * HV + i_hv) * K + o_k[None, :]
    tl.store(DQ + p_out, b_dq.to(DQ.dtype.element_ty), mask=m_tk)
    if DK_F16:  # fp16 with a power-of-two scale per row (DK_LOWP="f16")
        b_dks, b_pk = _pow2_rows(b_dk)
        tl.store(DK + p_out, b_dks.to(DK.dtype.element_ty), mask=m_tk)
        tl.store(DKS + i_kb * TH + rows * HV + i_hv, b_pk, mask=m_t)
    else:
        tl.store(DK + p_out, b_dk.to(DK.dtype.element_ty), mask=m_tk)
    tl.store(DW + p_out, (-b_dw).to(DW.dtype.element_ty), mask=m_tk)
    tl.store(DG + i_kb * TH + rows * HV + i_hv, b_dg, mask=m_t)


# ---------------------------------------------------------------------------------------------
# WY backward, dw, dbeta, dv and the reverse cumsum of the gate gradient


@triton.jit
def _gated_delta_bwd_wy_kernel(
    K_,
    RK,
    V_,
    BETA,
    GC,
    AINV,
    DW,
    DU,
    DK,
    DGP,
    DV,
    DB,
    DGOUT,
    DKX,
    RSK,
    DKS,
    DKS2,
    CU,
    TAB,
    N,
    TH,
    H: tl.constexpr,
    HV: tl.constexpr,
    K: tl.constexpr,
    V: tl.constexpr,
    BT: tl.constexpr,
    NKB: tl.constexpr,
    BC: tl.constexpr,
    DOT_PREC: tl.constexpr,
    KEEP: tl.constexpr,
    EXACT_EXP: tl.constexpr,
    NORM: tl.constexpr,
    L2N_BWD: tl.constexpr,
    USE_TAB: tl.constexpr,
    DK_F16: tl.constexpr = False,
):
    """Per chunk and value head, over ``[BT, BC]`` column tiles so that only ``[BT, BT]`` matrices stay
    live (a whole-row version held five ``[BT, K]`` fp32 tiles: 255 registers, spills and 229 KB of
    shared memory on sm_90):

    1. key tiles: ``D += dW (exp(G) K)^T`` (dW from ``dqkwg``), ``KK += K K^T``;
    2. value tiles: ``D += dU V^T``, ``dV = beta T^T dU``, the dU part of dbeta;
    3. ``dT = D * beta_j``, ``dA = -T^T dT T^T``, ``M = dA_ts exp(G_t - G_s) beta_t`` (strictly lower):
       the gradient of ``K K^T`` is ``M + M^T``, its gate part ``rowsum(M * KK) - colsum(M * KK)``;
    4. key tiles again: ``dK += beta exp(G) T^T dW + M K + M^T K`` (``M^T K`` as the transpose of
       ``K^T M``: a transposed dot result that is only added, never fed to a dot, see ``common.py``) in
       one read-modify-write of DK, and the dW parts of dbeta and dG;
    then the reverse cumsum of dG inside the chunk. ``L2N_BWD`` (``HV == H``, K_ the forward's normalised copy
    ``y`` with its factors ``RSK``): 5. the l2norm backward of k, ``DKX = r (dK - y sum(y dK))``, from the row
    sums ``sum(y dK)`` gathered in step 4 and the tiles step 4 just stored (re-read from L2 after a barrier),
    so that no separate l2norm launch reads dK and y back from DRAM (``ops.FUSE_K_L2N``). The ``[BT, BC] x [BC, BT]`` products of D take their
    operands in the intermediate dtype (dW, dU are stored in it; K, V exact; the gate after the dot). The
    products with T, dA and M take bf16 operands for bf16 inputs (as FLA; session 6: 0.955 -> 0.722 ms
    per fwd+bwd on H16 8 x 4096, every gpu-test case inside the SPEC rule with its error ratios
    unchanged) and fp32 operands for fp16/fp32 inputs (exact products). Session 4's version recomputed
    dW from the states three times and every ``[BT, BT]`` product in both orientations (1.75 ms of the
    4.8 ms backward on H16 8 x 4096).
    """
    if USE_TAB:
        i_s, row0, eos = _chunk_of_tab(TAB, tl.program_id(0))
    else:
        i_s, row0, eos = _chunk_of_slot(CU, N, BT)
    if row0 >= eos:
        return
    i_hv = tl.program_id(1)
    i_h = i_hv // (HV // H)
    o_t = tl.arange(0, BT)
    rows = (row0 + o_t).to(tl.int64)
    m_t = (row0 + o_t) < eos
    o_c = tl.arange(0, BC)

    # the tensor-core operand of T: the input dtype for bf16 inputs (as FLA), fp32 otherwise; T arrives
    # in bf16 for bf16 inputs (cast by chunk_bwd, or kept so by ops.SAVE_T="input"), else fp32
    dt = K_.dtype.element_ty
    b_a = _c(
        tl.load(AINV + (rows[:, None] * HV + i_hv) * BT + o_t[None, :], mask=m_t[:, None], other=0.0),
        dt,
        DOT_PREC,
        KEEP,
    )
    b_beta = tl.load(BETA + rows * HV + i_hv, mask=m_t, other=0.0).to(tl.float32)
    b_g = tl.load(GC + rows * HV + i_hv, mask=m_t, other=0.0)
    b_eg = tl.where(m_t, _exp(b_g, EXACT_EXP), 0.0)
    b_f = b_beta * b_eg

    b_d = tl.zeros([BT, BT], dtype=tl.float32)  # [i, j] = dT_ij / beta_j
    b_kk = tl.zeros([BT, BT], dtype=tl.float32)  # symmetric
    b_db = tl.zeros([BT], dtype=tl.float32)
    b_dg = tl.zeros([BT], dtype=tl.float32)
    # one loop over column tiles, key part then value part (a tile past K or V loads zeros and adds nothing), so
    # that the value tiles' loads are in flight with the key tiles' (session 34, H200 Nsight Compute: 9% of wy's
    # stall samples sat at the barrier after the value loop's first cp.async group when it ran as a loop of its
    # own; merged, round 7: wy 0.676 -> 0.660 ms, backward x1.001-1.006 on the suite rows)
    for i_c in range(((K if K > V else V) + BC - 1) // BC):
        o_k = i_c * BC + o_c
        m_k = o_k < K
        m_tk = m_t[:, None] & m_k[None, :]
        b_k = tl.load(K_ + (rows[:, None] * H + i_h) * K + o_k[None, :], mask=m_tk, other=0.0)
        b_k = _l2n(b_k, RK, rows, m_t, i_h, H, NORM)
        b_kk += tl.dot(b_k, tl.trans(b_k), input_precision=DOT_PREC)
        b_dwh = tl.load(DW + (rows[:, None] * HV + i_hv) * K + o_k[None, :], mask=m_tk, other=0.0)
        # D_ij += sum_c dW_ic k_jc exp(G_j)
        b_d += tl.dot(b_dwh, tl.trans(b_k.to(b_dwh.dtype)), input_precision=DOT_PREC) * b_eg[None, :]
        o_v = i_c * BC + o_c
        m_v = o_v < V
        p_v = (rows[:, None] * HV + i_hv) * V + o_v[None, :]
        m_tv = m_t[:, None] & m_v[None, :]
        b_duh = tl.load(DU + p_v, mask=m_tv, other=0.0)
        b_vh = tl.load(V_ + p_v, mask=m_tv, other=0.0)
        b_d += tl.dot(b_duh, tl.trans(b_vh.to(b_duh.dtype)), input_precision=DOT_PREC)
        b_v = b_vh.to(tl.float32)
        b_tdu = tl.dot(tl.trans(b_a), _c(b_duh, dt, DOT_PREC, KEEP), input_precision=DOT_PREC)
        tl.store(DV + p_v, (b_tdu * b_beta[:, None]).to(DV.dtype.element_ty), mask=m_tv)
        b_db += tl.sum(b_tdu * b_v, 1)

    # dA = -T^T dT T^T on the strictly lower part of A (A_ts = beta_t exp(G_t - G_s) k_t.k_s)
    strict = (o_t[:, None] > o_t[None, :]) & m_t[:, None]
    b_da = -tl.dot(
        _c(
            tl.dot(tl.trans(b_a), _c(b_d * b_beta[None, :], dt, DOT_PREC, KEEP), input_precision=DOT_PREC),
            dt,
            DOT_PREC,
            KEEP,
        ),
        tl.trans(b_a),
        input_precision=DOT_PREC,
    )
    e_ts = _exp(tl.where(strict, b_g[:, None] - b_g[None, :], 0.0), EXACT_EXP)
    b_dm = tl.where(strict, b_da * e_ts, 0.0)  # d(beta_t kk_ts) before beta
    b_db += tl.sum(b_dm * b_kk, 1)
    b_dm = b_dm * b_beta[:, None]  # gradient w.r.t. kk_ts (t > s)
    # G_t - G_s: + for the row t, - for the column s
    b_dmkk = b_dm * b_kk
    b_dg += tl.sum(b_dmkk, 1) - tl.sum(b_dmkk, 0)
    for i_kb in tl.static_range(NKB):  # partial gate gradients of dqkwg's key blocks
        b_dg += tl.load(DGP + i_kb * TH + rows * HV + i_hv, mask=m_t, other=0.0)

    # dK += beta exp(G) T^T dW + M K + M^T K, one read-modify-write of DK per tile (dW read again)
    b_ys = tl.zeros([BT], dtype=tl.float32)  # L2N_BWD: sum(y dK) per row
    for i_k in range(tl.cdiv(K, BC)):
        o_k = i_k * BC + o_c
        m_k = o_k < K
        m_tk = m_t[:, None] & m_k[None, :]
        b_kh = tl.load(K_ + (rows[:, None] * H + i_h) * K + o_k[None, :], mask=m_tk, other=0.0)
        b_kh = _l2n(b_kh, RK, rows, m_t, i_h, H, NORM)
        b_k = b_kh.to(tl.float32)
        p_kv = (rows[:, None] * HV + i_hv) * K + o_k[None, :]
        b_dw = _c(tl.load(DW + p_kv, mask=m_tk, other=0.0), dt, DOT_PREC, KEEP)
        b_tdw = tl.dot(tl.trans(b_a), b_dw, input_precision=DOT_PREC)
        b_tdwk = tl.sum(b_tdw * b_k, 1)
        b_db += b_tdwk * b_eg
        b_dg += b_tdwk * b_f
        # d/dK of sum(M * K K^T) = M K + M^T K
        b_kc = _c(b_kh, dt, DOT_PREC, KEEP)
        b_dmc = _c(b_dm, dt, DOT_PREC, KEEP)
        b_mk = tl.dot(b_dmc, b_kc, input_precision=DOT_PREC) + tl.trans(
            tl.dot(tl.trans(b_kc), b_dmc, input_precision=DOT_PREC)
        )
        b_dk0 = tl.load(DK + p_kv, mask=m_tk, other=0.0).to(tl.float32)
        if DK_F16:  # dqkwg's per-row scales of this tile (its key block is this tile: the launcher checks)
            b_dk0 = b_dk0 * tl.load(DKS + i_k * TH + rows * HV + i_hv, mask=m_t, other=0.0)[:, None]
        b_dkn = b_dk0 + b_tdw * b_f[:, None] + b_mk
        if DK_F16:  # scales of its own in DKS2 (no cross-thread read-after-write on DKS within a tile)
            b_dkns, b_pk = _pow2_rows(b_dkn)
            tl.store(DK + p_kv, b_dkns.to(DK.dtype.element_ty), mask=m_tk)
            tl.store(DKS2 + i_k * TH + rows * HV + i_hv, b_pk, mask=m_t)
        else:
            tl.store(DK + p_kv, b_dkn.to(DK.dtype.element_ty), mask=m_tk)
        if L2N_BWD:
            b_ys += tl.sum(b_dkn * b_k, 1)

    if L2N_BWD:
        # every thread re-reads tiles other threads stored: the barrier orders those stores before the loads
        tl.debug_barrier()
        b_r = tl.load(RSK + rows * H + i_h, mask=m_t, other=0.0)
        for i_k in range(tl.cdiv(K, BC)):
            o_k = i_k * BC + o_c
            m_tk = m_t[:, None] & (o_k < K)[None, :]
            p_k = (rows[:, None] * H + i_h) * K + o_k[None, :]  # HV == H: also DK's offsets
            b_y = tl.load(K_ + p_k, mask=m_tk, other=0.0).to(tl.float32)
            b_dkt = tl.load(DK + p_k, mask=m_tk, other=0.0).to(tl.float32)
            if DK_F16:
                b_dkt = b_dkt * tl.load(DKS2 + i_k * TH + rows * HV + i_hv, mask=m_t, other=0.0)[:, None]
            b_dx = b_r[:, None] * (b_dkt - b_y * b_ys[:, None])
            tl.store(DKX + p_k, b_dx.to(DKX.dtype.element_ty), mask=m_tk)

    # g_t enters every G_t' with t' >= t in the chunk
    b_dg = tl.where(m_t, b_dg, 0.0)
    b_dg = tl.sum(b_dg, 0) - tl.cumsum(b_dg, 0) + b_dg
    tl.store(DB + rows * HV + i_hv, b_db, mask=m_t)
    tl.store(DGOUT + rows * HV + i_hv, b_dg, mask=m_t)


# ---------------------------------------------------------------------------------------------
# launcher

# The intra-chunk dU_local = P^T dO computed inside the sequential dhu kernel (from the q, k, dO tiles it
# loads anyway) instead of by dv_local into an fp32 [T, HV, V] buffer that dhu reads back: saves the
# dv_local launch, its buffer and ~0.5 GB of traffic; costs the [BT, BT] score tile and one more dot
# per step of the latency-bound state pass. H200, Triton 3.6, bf16 K=V=128, 32768 tokens (session 9,
# bwd ms, dv_local -> fused): H16 8 x 4096 3.432 -> 3.291, H32 8 x 4096 6.867 -> 6.218, H16 64 x 512
# 3.491 -> 3.148, H16 ragged 3.638 -> 3.513, but H16 1 x 32768 4.925 -> 5.118 (16 state chains;
# presumably the longer step on the critical path). "auto" (default) fuses when the state pass has at
# least half as many (sequence, head) chains as the GPU has SMs; "0" / "1" force it (JAGATTN_GD_FUSE_DV).
FUSE_DV = env_choice("JAGATTN_GD_FUSE_DV", ("auto", "0", "1"), "auto")


def _fuse_dv(n_chains, device) -> bool:
    if FUSE_DV in (True, "1"):
        return True
    if FUSE_DV in (False, "0"):
        return False
    if not isinstance(n_chains, int):
        return False  # symbolic batch (compile with dynamic dims): no count-dependent choice, no guard
    index = (device.index or 0) if device.type == "cuda" else 0
    return 2 * n_chains >= _num_sms(index)


# Where the chunk kernels find their chunk: a table built once per backward (``common.chunk_table``, one small launch:
# per slot its first row and its sequence's end) instead of each program's binary search over cu_seqlens (``log2 N``
# dependent loads before the first gate / tile load can issue). "wy" (default): the WY kernel reads it; "wy_dqkwg":
# dqkwg too; "off": both search (and no table launch). The module value is read at every call (device A/Bs flip it).
# H200, session 34 round 2 (same process, gradients bitwise): wy 0.749 -> 0.672 ms (H16-8seqs), 0.765 -> 0.675
# (64seqs), 0.762 -> 0.684 (ragged), backward x1.026-1.032, none at N = 1; in dqkwg the table was slower (0.752 ->
# 0.799 ms), hence "wy". Cost: one launch of cdiv(slots, 256) programs per backward.
CHUNK_TABLE = env_choice("JAGATTN_GD_CHUNK_TABLE", ("wy", "off", "wy_dqkwg"), "wy")

# dk between dqkwg and wy in bf16 instead of fp32 (opt-in, session 48): "l2n" where wy applies k's l2norm backward
# to bf16 inputs without GVA (dk is then an internal buffer), "off" (default). Read at every call. H200 (Triton 3.6,
# gd_switch_ab, same process): backward 2.570 -> 2.463 ms (H16-8seqs), 3.094 -> 2.968 (1seq), 2.954 -> 2.843
# (ragged), dqkwg -0.04 and wy -0.07 ms, peak 2.171 -> 2.037 GB; the 7 gpu tests on this path pass. Not the default:
# it doubles dk's error against the fp32 reference (benchmarks/gd_dk_lowp_check.py, 16 cases at 2048 tokens: dk at
# up to 0.98 of the SPEC rule's allowance against 0.55 with fp32; rms 0.49-0.56 against 0.35-0.38), too little
# margin for random inputs.
# "f16" (session 48; H200 session 49: slower than off, backward 3.19 vs 3.10 ms on H16-1seq, dqkwg +0.03 and wy
# +0.06 ms for the per-row max, a cross-warp reduction): fp16 with a power-of-two scale per row and 64-column tile
# (``common._pow2_rows``), 11 significant bits against the row's largest element instead of bf16's 8, in both of dk's round
# trips (dqkwg -> wy and wy -> its l2norm tail), for every input dtype on that path. CPU (interpreter, fp32 inputs,
# ``test_dk_lowp_f16_keeps_dk_to_fp16_precision``; the session's script on 240-token cases): dk's added error 3e-4
# of its rms against 6e-3 with bf16 (both round trips; each alone ~half of that). Next: benchmarks/rounds/s48_next_round.sh.
DK_LOWP = env_choice("JAGATTN_GD_DK_LOWP", ("off", "l2n", "f16"), "off")


# dS per chunk stored as bf16 hi + lo parts (DH_SPLIT of dhu / fwd_h) instead of fp32 (opt-in): "auto" on
# the bf16 speed path, where dqkwg rounds dS to bf16 for its dots anyway, so it reads half the bytes, and
# the lo part is freed right after the recompute; "off" (default): fp32; "all": also for other dtypes,
# with hi and lo in the chunk kernels' q dtype (fp32: hi + lo is then exact, so every output is bitwise
# that of "off": a CPU test mode of the plumbing, whose bf16 rounding only a GPU can run). H200 (session
# 13, gd_switch_ab.py, same process): bitwise the same gradients, peak memory 2.169 -> 1.898 GB on
# H16-8seqs, dqkwg 0.921 -> 0.864 ms, but the two sequential passes slower (dhu 0.469 -> 0.548, the
# recompute 0.374 -> 0.449; H16-1seq 0.941 -> 1.266): backward 2.93 -> 3.02 ms (H16-8seqs), 4.45 -> 4.78
# (H16-1seq), 3.30 -> 3.46 (H16-ragged). A memory option, not a speed one.
DH_SPLIT = env_choice("JAGATTN_GD_DH_SPLIT", ("auto", "off", "all"), "off")


# dS per chunk as fp16 with a power-of-two scale per row and 16 columns (``common._pow2_groups16``; session 48; H200
# session 49, readers loading a scale tile: dqkwg 0.83 -> 0.78 ms but the recompute 0.45 -> 0.68 and dhu on H16-1seq
# 0.77 -> 0.89 (layout conversions of the reshape and the scale store in their chains), backward 2.80 vs ~2.6 ms on
# H16-8seqs: slower, off): "on" on the bf16 speed path (where dqkwg rounds dS to bf16 for its dots
# anyway), "all" for every dtype (a CPU test mode: fp32 / fp16 dots then see fp16's rounding of dS), "off" (default);
# V a multiple of 16. Half of fp32's bytes in dhu's store, the recompute's gate-sum load and dqkwg's load (~0.8 GB
# less traffic on H16-8seqs), at 11 significant bits where the gate sums need more than bf16's 8 (CPU, interpreter,
# fp32 inputs, 240 tokens, K = 128, V = 64, slow gates: dg's added error 0.6-4.1e-4 of its rms against the bf16
# reference run's own 1.2-2.7e-3; dS in bf16 added up to 6.5e-3). Read at every call.
DH_F16 = env_choice("JAGATTN_GD_DH_F16", ("off", "on", "all"), "off")


# The backward's recompute of the per-chunk states beside dhu (session 49; opt-in): "on": the recompute no longer
# forms the gate sums sum(S0 * dS) (it needed dhu's dS, so it ran after dhu); dqkwg forms them from the states and dS
# it reads anyway, and on a GPU in eager mode the recompute runs on a side stream at the same time as dhu, two
# latency-bound chains at once. The states go to dqkwg in fp32, or where they were 16-bit (the bf16 speed path) as
# fp16 quotients by a power-of-two scale per 16 elements of a row (11 bits; bf16's 8 cost the gate sums several x
# accuracy), V a multiple of 16. "all": fp16 states for every dtype (a CPU test mode); "off" (default): the
# recompute after dhu with the gate sums (also what "on" falls back to where dS is split in bf16 parts, DH_SPLIT, or
# a 16-bit V is not a multiple of 16). H200 (Triton 3.6, gd_switch_ab, same process, backward ms off -> on):
# H16-8seqs 2.610 -> 2.482, 1seq 3.101 -> 2.986, ragged 2.995 -> 2.587, 64seqs 2.584 -> 2.497, H32-8seqs 5.247 ->
# 5.047; peak +34 MB (the scales; 2.205 GB against FLA's 2.251 on 8seqs); dqkwg 0.83 -> 0.88 ms (scales, sums).
# The default since session 50: with it on, all 45 gated delta gpu tests pass on the H200 (Triton 3.6, 5 workers
# sharing the GPU, JAGATTN_POISON=1), test_gpu_overlap_side_stream_is_the_serial_result included; session 49's three
# failures came from the side stream waiting before _state_pass's NaN-poisoned allocations (the wait is now after
# them). SPEC-rule margins on the speed path (40 heads, lengths 700,1,1347, initial state): worst 0.89 of the
# allowance off and on. "off" is the old order; "all" is the CPU test mode (fp16 states for every dtype). Read at
# every call.
OVERLAP = env_choice("JAGATTN_GD_OVERLAP", ("off", "on", "all"), "on")
_SIDE: dict = {}


def _side_stream(dev):
    """The side stream of ``dev`` for the recompute beside dhu (one per device, made on first use), or None off a
    GPU (the interpreter runs the two launches one after the other) and while tracing (a traced graph keeps no
    stream context: its kernels run in graph order on one stream)."""
    if dev.type != "cuda" or _tracing():
        return None
    if dev not in _SIDE:
        _SIDE[dev] = torch.cuda.Stream(dev)
    return _SIDE[dev]


def _dh_split(q_dtype, in_dtype, t, hv) -> tuple[bool, torch.dtype]:
    """``(split, dtype of the dS parts)`` for chunk kernels on ``q_dtype`` q/k from ``in_dtype`` inputs."""
    if DH_SPLIT == "all":
        return True, q_dtype
    if DH_SPLIT == "auto" and q_dtype == torch.bfloat16 and not keep_fp32(in_dtype, "dqkwg", t, hv):
        return True, torch.bfloat16
    return False, torch.float32


def chunk_bwd(
    q,
    k,
    v,
    g,
    beta,
    initial_state,
    cu,
    scale: float,
    do,
    dht,
    saved=None,
    rstd=None,
    k_l2n_rstd=None,
    seg=None,
):
    """Gradients of the chunked gated delta rule on prepared inputs (l2norm already applied, or
    ``rstd = (rq, rk)`` applied on load as in ``chunk_fwd``; dq, dk are then still the gradients
    w.r.t. the normalised q, k).

    ``k_l2n_rstd`` (``[T, H]`` fp32, only with ``HV == H`` and ``k`` the forward's normalised copy): the
    factors of that copy; the WY kernel then also applies k's l2norm backward, and the returned dk is the
    gradient w.r.t. the raw k in ``k``'s dtype (``l2norm_bwd_from_y``'s, up to the order of one row sum).

    ``saved``: ``(gc [T, HV] fp32, T^-1 [T, HV, BT] fp32 or input dtype)`` kept by the forward
    (``ops.SAVE_T``, by default whenever a backward follows); ``kkt_solve`` is then skipped and only
    W, U~ are recomputed.

    ``seg``: ``(chunks per segment, [segment slots, HV, K, V] fp32 states)`` kept by the forward
    (``chunk_fwd.seg_chunks``): the recompute of the per-chunk states runs one chain per segment from them.

    Returns ``(dq [T, H, K] fp32 (bf16 for bf16 inputs without GVA), dk [T, H, K] fp32, dv [T, HV, V]
    v.dtype, dg [T, HV] fp32, dbeta [T, HV] fp32, dh0 [N, HV, K, V] fp32, or ``[0]`` without
    ``initial_state``)``.
    """
    t, h, dk_ = q.shape
    hv, dv_ = v.shape[1], v.shape[2]
    n = cu.shape[0] - 1
    ns = num_slots(t, n)
    dev = q.device
    bk = block_k(dk_)

    # from the input dtype (q/k may be fp32 copies: l2norm, fp16), per kernel (JAGATTN_GD_FP16_TF32)
    def prec_of(kernel: str) -> str:
        return dot_precision(v.dtype, kernel)

    exact = exact_exp(q.dtype)
    rq, rk = rstd if rstd is not None else (None, None)
    norm = rq is not None
    rq_, rk_ = (rq, rk) if norm else (q, k)  # unread pointers without rstd
    # chunk_fwd.FUSE_WU: the recompute forms v_new from T (fuse_h), dhu W^T dU (fuse_dhu); the w/u kernel
    # then writes what is still read: W for an unfused dhu, nothing when both are fused
    row_bytes = chunk_fwd._h_row_bytes(k, v)
    # decided from the chains the recompute runs: one per segment with the forward's segment states (``seg``:
    # H16-1seq's 9 segment slots x 16 heads run V blocks of 64, where its 16 sequence chains alone would give 16)
    seg_n, hseg = seg if seg is not None else (0, None)
    h_chains = chunk_fwd.state_pass_chains(t, n, seg_n, hseg is not None)
    fuse_h = chunk_fwd.fuse_wu("bwd_h", h_chains * hv, dv_, dk_, row_bytes)
    w_bytes = inter_dtype(k.dtype, "w", t, hv).itemsize  # dhu's launch_config below
    fuse_dhu = fuse_h and chunk_fwd.fuse_wu("bwd_dhu", n * hv, dv_, dk_, dk_ * max(q.element_size(), w_bytes))
    gc, ainv, w, u = _prepare(
        k, v, g, beta, cu, saved=saved, rk=rk, wu=False if fuse_dhu else "w" if fuse_h else True
    )
    if (
        not fuse_h  # the fused passes below read T
        and saved is None
        and prec_of("wy") == "tf32"
        and ainv.dtype != k.dtype
        and not keep_fp32(v.dtype, "wy", t, hv)
    ):
        # W and U~ are recomputed: from here on only wy reads T, and for bf16 inputs it rounds T to
        # bf16 for the tensor cores anyway (on the GPU with the same round-to-nearest-even as this cast,
        # so the results are unchanged; Triton's CPU interpreter truncates instead), so the fp32 copy
        # ([T, HV, 64], 128 MiB on the 32768-token 16-head rows) is not kept to the backward's peak.
        # Cost: one cast pass over T (estimated ~0.05 ms on H16 8 x 4096, not yet measured); the wu
        # kernel storing a bf16 copy while T is in its registers would save the re-read. Not for a T
        # the forward kept (ops.SAVE_T): autograd holds that one anyway, a copy would only add memory.
        ainv = ainv.to(k.dtype)

    # the full dU in the intermediate dtype (bf16 for bf16 inputs): its readers (dqkwg, wy) round it
    # to that dtype for the tensor cores, and it holds the memory dW needs at the backward's peak
    du = new_empty((t, hv, dv_), dtype=inter_dtype(k.dtype, "du", t, hv), device=dev)
    # not updated in place: dhu reads the local dv and writes the full one to another buffer (an
    # in-place variant, with a barrier between the tile's load and store, crashed in dhu on H200);
    # with FUSE_DV dhu computes it itself (no buffer, no dv_local launch)
    fuse_dv = _fuse_dv(n * hv, dev)
    du_local = du if fuse_dv else new_empty((t, hv, dv_), dtype=torch.float32, device=dev)
    # dS per chunk: fp32, or (DH_SPLIT, the bf16 speed path) as a bf16 hi part, which is what dqkwg rounds
    # dS to for its dots (half its read), plus a bf16 lo part for the recompute's gate sums, which need
    # dS to ~16 bits (bf16 alone costs 2-8x accuracy on dg) and is freed right after it
    dh_split, dh_dtype = _dh_split(q.dtype, v.dtype, t, hv)
    dh_f16 = dv_ % 16 == 0 and (
        DH_F16 == "all"
        or DH_F16 == "on"
        and q.dtype == torch.bfloat16
        and not keep_fp32(v.dtype, "dqkwg", t, hv)
    )
    if dh_f16:  # DHLO holds the scales: one per 16 elements of a row
        dh_split, dh_dtype = 2, torch.float16
    dhbuf = new_empty((ns, hv, dk_, dv_), dtype=dh_dtype, device=dev)
    dhlo = new_empty(
        (ns * hv * dk_ * dv_ // 16,) if dh_f16 else (ns, hv, dk_, dv_) if dh_split else (0,),
        dtype=torch.float32 if dh_f16 else dh_dtype,
        device=dev,
    )
    # no initial state: nothing reads dh0, so it is neither stored nor allocated ([N, HV, K, V] fp32 at
    # the backward's peak: 64 MiB on 64 sequences x 16 heads at K = V = 128)
    store_dh0 = initial_state is not None
    dh0 = new_empty((n, hv, dk_, dv_) if store_dh0 else (0,), dtype=torch.float32, device=dev)
    if ns > 0 and not fuse_dv:
        bv, warps, stages = launch_config(
            "bwd_dv_local", n_programs=ns * hv, v=dv_, k_row_bytes=dk_ * k.element_size()
        )
        launch(
            _gated_delta_bwd_dv_local_kernel,
            (ns, hv, triton.cdiv(dv_, bv)),
            q,
            k,
            rq_,
            rk_,
            gc,
            do,
            du_local,
            cu,
            n,
            scale,
            H=h,
            HV=hv,
            K=dk_,
            V=dv_,
            BT=BT,
            BK=bk,
            BV=bv,
            DOT_PREC=prec_of("dv_local"),
            KEEP=keep_fp32(v.dtype, "dv_local", t, hv),
            EXACT_EXP=exact,
            NORM=norm,
            num_warps=warps,
            num_stages=stages,
        )
    if fuse_dhu:
        w = new_empty((0,), dtype=inter_dtype(k.dtype, "w", t, hv), device=dev)  # W's dtype only
    # OVERLAP: the recompute of the per-chunk states without the gate sums, which dqkwg forms instead, so it does not
    # wait for dhu's dS: on a GPU it runs on a side stream beside dhu (two latency-bound chains at once)
    h_dtype = inter_dtype(k.dtype, "h", t, hv)
    gsum = OVERLAP != "off" and (dh_f16 or not dh_split) and (h_dtype == torch.float32 or dv_ % 16 == 0)
    h_f16 = gsum and dv_ % 16 == 0 and (h_dtype != torch.float32 or OVERLAP == "all")
    if gsum:
        hs = new_empty((ns * hv * dk_ * dv_ // 16,) if h_f16 else (0,), dtype=torch.float32, device=dev)
        # (the side stream waits for the current one inside _state_pass, after its allocations)
        side = _side_stream(dev)
        gh = hs  # unread (dqkwg forms the gate sums)
        hbuf, vnew, _, _ = _state_pass(
            k, None if fuse_h else w, u, gc, initial_state, cu, in_dtype=v.dtype, store_final=False, rk=rk,
            fused=(v, beta, ainv) if fuse_h else None, seg=seg_n, hseg=hseg, hs=hs if h_f16 else None, stream=side,
            stage="bwd_h",
        )  # fmt: skip
    if n > 0:
        bv, warps, stages = launch_config(
            "bwd_dhu", n_programs=n * hv, v=dv_, k_row_bytes=dk_ * max(q.element_size(), w.element_size())
        )
        launch(
            _gated_delta_bwd_dhu_kernel,
            (triton.cdiv(dv_, bv), n * hv),
            q,
            k,
            rq_,
            rk_,
            w,
            beta,
            ainv,
            gc,
            do,
            du_local,
            du,
            dht if dht is not None else gc,
            dh0 if store_dh0 else gc,
            dhbuf,
            dhlo if dh_split else dhbuf,
            cu,
            n,
            scale,
            H=h,
            HV=hv,
            K=dk_,
            V=dv_,
            BT=BT,
            BK=bk,
            BV=bv,
            USE_FINAL_STATE_GRADIENT=dht is not None,
            STORE_DH0=store_dh0,
            DOT_PREC=prec_of("dhu"),
            KEEP=keep_fp32(v.dtype, "dhu", t, hv),
            EXACT_EXP=exact,
            NORM=norm,
            FUSE_DV=fuse_dv,
            PREFETCH=state_prefetch("bwd_dhu"),
            DH_SPLIT=dh_split,
            FUSE_W=fuse_dhu,
            WU_PREC=dot_precision(v.dtype, "wu") if fuse_dhu else "ieee",
            num_warps=warps,
            num_stages=stages,
        )
    del du_local
    if gsum:
        if side is not None:
            torch.cuda.current_stream(dev).wait_stream(side)
    else:  # after dhu, so it can form sum(S0 * dS) from its exact fp32 state
        hbuf, vnew, _, gh = _state_pass(
            k, None if fuse_h else w, u, gc, initial_state, cu, in_dtype=v.dtype, store_final=False, dhbuf=dhbuf,
            rk=rk, dhlo=dhlo if dh_split else None, fused=(v, beta, ainv) if fuse_h else None, seg=seg_n, hseg=hseg,
            dh_f16=dh_f16, stage="bwd_h",
        )  # fmt: skip
    if not dh_f16:  # the lo part is the recompute's only; DH_F16's scales are dqkwg's too
        del dhlo
    del w, u  # free before the per-chunk gradient buffers are allocated (peak memory)
    grp = hv // h
    # dq is final after dqkwg (only the l2norm backward or the cast to q's dtype follow), so without a
    # group sum it is stored in the intermediate dtype: for bf16 inputs that halves the buffer alive at
    # the backward's peak (128 MiB on the 32768-token 16-head rows, what pays for keeping T, ops.SAVE_T)
    # and its write + read. dk stays fp32: wy adds its WY terms to it.
    dq = new_empty(
        (t, hv, dk_), dtype=inter_dtype(k.dtype, "dq", t, hv) if grp == 1 else torch.float32, device=dev
    )
    # the chunk table (CHUNK_TABLE): built once, read by the kernels that take it
    tab_wy = CHUNK_TABLE in ("wy", "wy_dqkwg")
    tab_dqkwg = CHUNK_TABLE == "wy_dqkwg"
    tab = chunk_table(cu, ns) if tab_wy or tab_dqkwg else cu
    # K rows in bytes for launch_config's narrow-row dqkwg config, passed only for 16-bit q/k copies and states (the
    # bf16 speed path, the one the device measured); 0 (no row size: the first candidate) for the fp32 copies / states
    # of fp16, fp32 and the bf16 precise path, whose rows can be as short at small K
    rows16 = k.element_size() == 2 and hbuf.element_size() == 2
    bv, warps, stages, bkb = launch_config(
        "bwd_dqkwg", n_programs=ns * hv, v=dv_, k_row_bytes=dk_ * 2 if rows16 else 0
    )
    bkb = min(bkb, bk)
    nkb = triton.cdiv(dk_, bkb)
    dgp = new_empty((nkb, t, hv), dtype=torch.float32, device=dev)
    bc, wy_warps, wy_stages = launch_config("bwd_wy", n_programs=ns * hv, v=dv_)
    # DK_LOWP: the pre-l2norm dk (an internal buffer when wy applies k's l2norm backward) in 16 bits: "l2n" k's bf16,
    # "f16" fp16 with per-row power-of-two scales per key block (DKS from dqkwg, DKS2 from wy), which needs wy's
    # column tiles to be dqkwg's key blocks (else dk stays fp32)
    fused_l2n = k_l2n_rstd is not None and grp == 1
    dk_f16 = DK_LOWP == "f16" and fused_l2n and bc == bkb
    dk_bf16 = DK_LOWP == "l2n" and fused_l2n and k.dtype == torch.bfloat16
    dk = new_empty(
        (t, hv, dk_),
        dtype=torch.float16 if dk_f16 else torch.bfloat16 if dk_bf16 else torch.float32,
        device=dev,
    )
    dks = new_empty((nkb, t, hv) if dk_f16 else (0,), dtype=torch.float32, device=dev)
    dks2 = new_empty((nkb, t, hv) if dk_f16 else (0,), dtype=torch.float32, device=dev)
    dw = new_empty((t, hv, dk_), dtype=inter_dtype(k.dtype, "dw", t, hv), device=dev)  # -dW, see dqkwg
    if ns > 0:
        launch(
            _gated_delta_bwd_dqkwg_kernel,
            (ns * nkb, hv),
            q,
            k,
            rq_,
            rk_,
            vnew,
            hbuf,
            dhbuf,
            gh,
            gc,
            do,
            du,
            dq,
            dk,
            dw,
            dgp,
            dks if dk_f16 else dgp,
            dhlo if dh_f16 else dgp,
            hs if h_f16 else dgp,
            cu,
            tab if tab_dqkwg else cu,
            n,
            t * hv,
            scale,
            H=h,
            HV=hv,
            K=dk_,
            V=dv_,
            BT=BT,
            BK=bkb,
            BV=bv,
            NG=1 if gsum else gh.shape[-1],
            BG=1 if gsum else triton.next_power_of_2(gh.shape[-1]),
            NKB=nkb,
            DOT_PREC=prec_of("dqkwg"),
            KEEP=keep_fp32(v.dtype, "dqkwg", t, hv),
            EXACT_EXP=exact,
            NORM=norm,
            USE_TAB=tab_dqkwg,
            DK_F16=dk_f16,
            DH_F16=dh_f16,
            H_F16=h_f16,
            GSUM=gsum,
            num_warps=warps,
            num_stages=stages,
        )
    del vnew, dhbuf, gh, hbuf  # read by dqkwg only
    if gsum:
        del hs
    if dh_f16:
        del dhlo
    dv = new_empty((t, hv, dv_), dtype=v.dtype, device=dev)
    db = new_empty((t, hv), dtype=torch.float32, device=dev)
    dg = new_empty((t, hv), dtype=torch.float32, device=dev)
    l2n = k_l2n_rstd is not None
    if l2n and (grp != 1 or norm):
        raise ValueError("chunk_bwd: k_l2n_rstd needs HV == H and k as the normalised copy (no rstd on load)")
    # the final dk in k's dtype (L2N_BWD); without it the kernel's DKX / RSK are unread stand-ins
    dkx = new_empty((t, h, dk_), dtype=k.dtype, device=dev) if l2n else dk
    if ns > 0:
        launch(
            _gated_delta_bwd_wy_kernel,
            (ns, hv),
            k,
            rk_,
            v,
            beta,
            gc,
            ainv,
            dw,
            du,
            dk,
            dgp,
            dv,
            db,
            dg,
            dkx,
            k_l2n_rstd if l2n else db,
            dks if dk_f16 else db,
            dks2 if dk_f16 else db,
            cu,
            tab if tab_wy else cu,
            n,
            t * hv,
            H=h,
            HV=hv,
            K=dk_,
            V=dv_,
            BT=BT,
            NKB=nkb,
            BC=bc,
            DOT_PREC=prec_of("wy"),
            KEEP=keep_fp32(v.dtype, "wy", t, hv),
            EXACT_EXP=exact,
            NORM=norm,
            L2N_BWD=l2n,
            USE_TAB=tab_wy,
            DK_F16=dk_f16,
            num_warps=wy_warps,
            num_stages=wy_stages,
        )
    del ainv, du, dw, dgp, tab
    dk = dkx  # the final dk with L2N_BWD (else dkx is dk itself)
    if grp > 1:
        dq = dq.view(t, h, grp, dk_).sum(2)
        dk = dk.view(t, h, grp, dk_).sum(2)
    return dq, dk, dv, dg, db, dh0
