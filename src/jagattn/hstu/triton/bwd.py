"""HSTU backward: dK/dV per key block (fp32 registers), optional fp32 atomic dQ, and the launcher.

One program owns one key block ``[n0, n1)`` of one (sequence, head): it keeps ``k, v`` and the fp32
accumulators ``dk, dv`` in registers and walks the query blocks that can see the keys, recomputing
``s = alpha q.k`` (nothing is saved by the forward but the inputs):

- the contextual rows ``[0, C)`` (they see every non-target key), always masked;
- the main rows ``[max(n0, C), a1)``: ``a1`` is the last row whose id is within the window of the
  block's last key (every later row for no window; only the diagonal for a block of target keys);
  query blocks inside ``[n1, f_hi)`` see every key of the block and skip the mask;
- with ``min_full_attn_seq_len = F`` and a window, the rows ``[U - F, n)`` that ignore the window.

The three ranges are walked in turn by one software-pipelined loop (edge blocks take the mask in a
run-time branch). Rows are restricted to each range by the load masks (rows outside read as zeros and
contribute nothing), so no pair is counted twice. ``ATOMIC_DQ`` (opt-in, ``JAGATTN_HSTU_ATOMIC_DQ=1``): the program also adds ``alpha ds k``
into an fp32 ``[L, H, Dq]`` buffer with ``tl.atomic_add`` (order-dependent rounding); by default dQ
comes from ``fwd.py``'s ``MODE == 1`` kernel instead (fixed order, bit-reproducible).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from ..._core.env import env_choice
from ..._core.launch import launch
from ..._core.triton_utils import next_power_of_2
from .bwd_gluon import launch_dkdv_gluon, use_gluon
from .fwd import (
    _ctx_slot,
    _load_rows,
    autotune_mean,
    fast_sigmoid,
    precision_of,
    row_class,
    row_off64,
    scale_last,
    tuning_configs,
    window_first,
)
from .mask import _ds_scale, _ids, _last_pos_id_le, _phases, _silu_a_ds, _zero_hidden_pair
from .schedule import _find, _grouped, l2_group, make_schedule, use_compact


@triton.jit
def _hstu_bwd_tile(
    dk,
    dv,
    b_k,
    b_v,
    p_q0,
    p_do0,
    p_dq0,
    off_q,
    off_do,
    stride_qm,
    stride_dom,
    stride_dqm,
    o_j,
    start_m,
    row_lo,
    row_hi,
    scale_a,
    alpha,
    C,
    W,
    F,
    M,
    o_dq,
    o_dv,
    m_dq,
    m_dv,
    masked,
    ATOMIC_DQ: tl.constexpr,
    HAS_CTX: tl.constexpr,
    HAS_TARGETS: tl.constexpr,
    HAS_WINDOW: tl.constexpr,
    HAS_FULL: tl.constexpr,
    PAD_DQ: tl.constexpr,
    PAD_DV: tl.constexpr,
    PRECISION: tl.constexpr,
    FAST_SIGMOID: tl.constexpr,
    SCALE_LAST: tl.constexpr,
    BLOCK_M: tl.constexpr,
    CTX_OUT: tl.constexpr,  # no row of this tile is contextual (ctx_split peeled them): the mask drops their term
):
    # the block's first row as a scalar pointer plus the loop-invariant in-tile offsets: two 64-bit adds
    # per copy instead of a 64-bit multiply-add per row (session 19)
    r = tl.arange(0, BLOCK_M)
    o_i = start_m + r
    m_i = (r >= row_lo - start_m) & (r < row_hi - start_m)
    row0 = start_m.to(tl.int64)
    b_q = _load_rows(p_q0 + row0 * stride_qm + off_q, m_i, m_dq, PAD_DQ)  # [BM, BDQ]
    b_do = _load_rows(p_do0 + row0 * stride_dom + off_do, m_i, m_dv, PAD_DV)  # [BM, BDV]
    b_qk = tl.dot(b_k, tl.trans(b_q), input_precision=PRECISION)  # [BN, BM] = <k_j, q_i>
    b_dp = tl.dot(b_v, tl.trans(b_do), input_precision=PRECISION)  # [BN, BM] = <v_j, do_i>
    # silu(s) / S, alpha * ds_ij (SCALE_LAST: silu(s), alpha ds_ij / ds_scale; the kernel scales dk, dv)
    b_a, b_ds = _silu_a_ds(b_qk, b_dp, alpha, scale_a, FAST_SIGMOID, SCALE_LAST)
    if masked:  # edge blocks (a run-time branch in the one pipelined loop)
        b_a, b_ds = _zero_hidden_pair(
            b_a, b_ds, o_i, o_j, C, W, F, M, HAS_CTX, HAS_TARGETS, HAS_WINDOW, HAS_FULL, CTX_OUT
        )
    b_ds_lp = b_ds.to(b_q.dtype)
    dv = tl.dot(b_a.to(b_do.dtype), b_do, dv, input_precision=PRECISION)
    dk = tl.dot(b_ds_lp, b_q, dk, input_precision=PRECISION)
    if ATOMIC_DQ:
        b_dq = tl.dot(tl.trans(b_ds_lp), b_k, input_precision=PRECISION)  # [BM, BDQ] fp32
        if SCALE_LAST:
            b_dq = b_dq * _ds_scale(scale_a, FAST_SIGMOID)
        p_dq = p_dq0 + o_i.to(tl.int64)[:, None] * stride_dqm + o_dq[None, :]
        tl.atomic_add(p_dq, b_dq, mask=m_i[:, None] & m_dq[None, :], sem="relaxed")
    return dk, dv


@triton.jit
def _hstu_bwd_ctx_step(
    dk,
    dv,
    b_k,
    b_v,
    b_q,
    b_do,
    P_DQ,
    stride_dqm,
    stride_dqh,
    i_h,
    bos,
    o_j,
    n0,
    ctx_end,
    scale_a,
    alpha,
    C,
    W,
    F,
    M,
    o_dq,
    m_dq,
    HAS_CTX: tl.constexpr,
    HAS_TARGETS: tl.constexpr,
    HAS_WINDOW: tl.constexpr,
    HAS_FULL: tl.constexpr,
    PRECISION: tl.constexpr,
    FAST_SIGMOID: tl.constexpr,
    SCALE_LAST: tl.constexpr,
    DQ_DIM: tl.constexpr,
    BLOCK_N: tl.constexpr,
    CTX_KS: tl.constexpr,
):
    """The contextual rows ``[0, ctx_end)`` (at most ``CTX_ROWS``) against the key block, before the main loop
    (``CTX_KS > 0``, see ``ctx_split``): their dK / dV terms as in the loop's contextual step, on a 16-row tile
    instead of a ``BLOCK_M`` one, and, for a key block at or past ``CTX_KS``, their dQ part
    ``alpha sum_j ds_ij k_j`` over the block's keys stored in fp32 into the dQ output's rows
    ``[n0 - BLOCK_N, n0 - BLOCK_N + 2 C)`` of this head (``_ctx_slot``): scratch that ``_hstu_ctx_dq_reduce``
    sums before the dQ kernel overwrites it. ``b_q, b_do``: the rows from ``_ctx_rows``."""
    r = tl.arange(0, CTX_ROWS)
    m_i = r < ctx_end
    b_qk = tl.dot(b_k, tl.trans(b_q), input_precision=PRECISION)  # [BN, CR]
    b_dp = tl.dot(b_v, tl.trans(b_do), input_precision=PRECISION)
    b_a, b_ds = _silu_a_ds(b_qk, b_dp, alpha, scale_a, FAST_SIGMOID, SCALE_LAST)
    b_a, b_ds = _zero_hidden_pair(b_a, b_ds, r, o_j, C, W, F, M, HAS_CTX, HAS_TARGETS, HAS_WINDOW, HAS_FULL)
    b_ds_lp = b_ds.to(b_q.dtype)
    dv = tl.dot(b_a.to(b_do.dtype), b_do, dv, input_precision=PRECISION)
    dk = tl.dot(b_ds_lp, b_q, dk, input_precision=PRECISION)
    if n0 >= CTX_KS:
        # k^T ds (a loaded operand transposed, never a product: the Triton >= 3.4 Hopper issue of gated_delta's
        # README), stored transposed
        b_dqt = tl.dot(tl.trans(b_k), b_ds_lp, input_precision=PRECISION)  # [BDQ, CR]
        if SCALE_LAST:
            b_dqt = b_dqt * _ds_scale(scale_a, FAST_SIGMOID)
        p_slot = _ctx_slot(
            P_DQ, bos + n0 - BLOCK_N, r[None, :], o_dq[:, None], i_h, stride_dqm, stride_dqh, DQ_DIM
        )
        tl.store(p_slot, b_dqt, mask=m_i[None, :] & m_dq[:, None])
    return dk, dv


@triton.jit
def _ctx_rows(p_q0, p_do0, stride_qm, stride_dom, ctx_end, o_dq, o_dv, m_dq, m_dv, PAD_DQ: tl.constexpr,
              PAD_DV: tl.constexpr):  # fmt: skip
    """q and dO of the contextual rows ``[0, ctx_end)`` as ``[CTX_ROWS, D]`` tiles (zeros past ``ctx_end``)."""
    r = tl.arange(0, CTX_ROWS)
    m_i = r < ctx_end
    r64 = r.to(tl.int64)
    b_q = _load_rows(p_q0 + r64[:, None] * stride_qm + o_dq[None, :], m_i, m_dq, PAD_DQ)
    b_do = _load_rows(p_do0 + r64[:, None] * stride_dom + o_dv[None, :], m_i, m_dv, PAD_DV)
    return b_q, b_do


@triton.jit
def _hstu_ctx_dq_reduce(
    DQ,
    SEQ_OFFSETS,
    stride_dqm,
    stride_dqh,
    C,
    H,
    DQ_DIM: tl.constexpr,
    BLOCK_D: tl.constexpr,
    BLOCK_N: tl.constexpr,
    CTX_KS: tl.constexpr,
    STAGES: tl.constexpr,
):
    """One (sequence, head) and ``BLOCK_D`` columns: the contextual rows' dQ parts of every key block at or past
    ``CTX_KS`` (stored by the dK/dV kernel, ``_hstu_bwd_ctx_step``) summed in key order, the sum stored in fp32 over
    the dQ output's rows ``[0, 2 C)``, where the dQ kernel's first query block adds it (fixed order: bit-reproducible;
    each dQ row holds at most one fp32 slot, so no program reads what another one writes)."""
    pid = tl.program_id(0)
    d0 = tl.program_id(1) * BLOCK_D
    i_b = pid // H
    i_h = pid % H
    bos = tl.load(SEQ_OFFSETS + i_b).to(tl.int64)
    n = (tl.load(SEQ_OFFSETS + i_b + 1).to(tl.int64) - bos).to(tl.int32)
    if n <= CTX_KS:
        return
    r = tl.arange(0, CTX_ROWS)[:, None]
    d = d0 + tl.arange(0, BLOCK_D)[None, :]
    m = (r < C) & (d < DQ_DIM)
    acc = tl.zeros([CTX_ROWS, BLOCK_D], dtype=tl.float32)
    for n0 in tl.range(CTX_KS, n, BLOCK_N, num_stages=STAGES):  # (independent loads in flight)
        acc += tl.load(
            _ctx_slot(DQ, bos + n0 - BLOCK_N, r, d, i_h, stride_dqm, stride_dqh, DQ_DIM), mask=m, other=0.0
        )
    tl.store(_ctx_slot(DQ, bos, r, d, i_h, stride_dqm, stride_dqh, DQ_DIM), acc, mask=m)


@triton.jit
def _hstu_bwd_kernel(
    Q,
    K,
    V,
    DO,
    DQ,
    DK,
    DV,
    SEQ_OFFSETS,
    NUM_TARGETS,
    ORDER,
    TABLE,
    stride_qm,
    stride_qh,
    stride_kn,
    stride_kh,
    stride_vn,
    stride_vh,
    stride_dom,
    stride_doh,
    stride_dqm,
    stride_dqh,
    stride_dkn,
    stride_dkh,
    stride_dvn,
    stride_dvh,
    alpha,
    inv_s,
    C,
    W,
    F,
    B,
    H,
    MAX_ROWS,
    L2_GROUP,
    AUTOTUNE_LEN,
    AUTOTUNE_MEAN,
    DQ_DIM: tl.constexpr,
    DV_DIM: tl.constexpr,
    ATOMIC_DQ: tl.constexpr,
    HAS_CTX: tl.constexpr,
    HAS_TARGETS: tl.constexpr,
    HAS_WINDOW: tl.constexpr,
    HAS_FULL: tl.constexpr,
    COMPACT: tl.constexpr,
    PRECISION: tl.constexpr,
    FAST_SIGMOID: tl.constexpr,
    SCALE_LAST: tl.constexpr,
    ROW_OFF64: tl.constexpr,
    CTX_KS: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_DQ: tl.constexpr,
    BLOCK_DV: tl.constexpr,
):
    # torch.compile passes Python floats as fp64 scalars; keep the score math in fp32 as in eager
    alpha = tl.cast(alpha, tl.float32)
    inv_s = tl.cast(inv_s, tl.float32)
    pid = tl.program_id(0)
    if COMPACT:
        # compact list: longest sequences first within each key block index, first blocks first
        i_h = pid % H
        i_b, i_nb, valid = _find(TABLE, ORDER, pid // H, MAX_ROWS, BLOCK_N, True)
        if not valid:
            return
    else:
        # runs of L2_GROUP (sequence, head) pairs, first key blocks (seen by the most rows) first in a run
        pair, i_nb = _grouped(pid, tl.cdiv(MAX_ROWS, BLOCK_N), B * H, L2_GROUP)
        i_h = pair % H
        i_b = pair // H
    bos = tl.load(SEQ_OFFSETS + i_b).to(tl.int64)
    eos = tl.load(SEQ_OFFSETS + i_b + 1).to(tl.int64)
    n = (eos - bos).to(tl.int32)
    n0 = i_nb * BLOCK_N
    if n0 >= n:
        return
    n1 = tl.minimum(n0 + BLOCK_N, n)
    if HAS_TARGETS:
        T = tl.minimum(tl.maximum(tl.load(NUM_TARGETS + i_b).to(tl.int32), 0), n)
    else:
        T = 0
    U = n - T
    if HAS_CTX:
        M = U - C + 1
    else:
        M = U

    o_j = n0 + tl.arange(0, BLOCK_N)
    m_j = o_j < n
    o_dq = tl.arange(0, BLOCK_DQ)
    o_dv = tl.arange(0, BLOCK_DV)
    m_dq = o_dq < DQ_DIM
    m_dv = o_dv < DV_DIM
    PAD_DQ: tl.constexpr = BLOCK_DQ != DQ_DIM
    PAD_DV: tl.constexpr = BLOCK_DV != DV_DIM
    o_j64 = o_j.to(tl.int64)
    p_k = K + bos * stride_kn + i_h * stride_kh + o_j64[:, None] * stride_kn + o_dq[None, :]
    p_v = V + bos * stride_vn + i_h * stride_vh + o_j64[:, None] * stride_vn + o_dv[None, :]
    b_k = _load_rows(p_k, m_j, m_dq, PAD_DQ)  # [BN, BDQ]
    b_v = _load_rows(p_v, m_j, m_dv, PAD_DV)  # [BN, BDV]
    dk = tl.zeros([BLOCK_N, BLOCK_DQ], dtype=tl.float32)
    dv = tl.zeros([BLOCK_N, BLOCK_DV], dtype=tl.float32)
    p_q0 = Q + bos * stride_qm + i_h * stride_qh
    p_do0 = DO + bos * stride_dom + i_h * stride_doh
    p_dq0 = DQ + bos * stride_dqm + i_h * stride_dqh
    scale_a = alpha * inv_s
    r_m = tl.arange(0, BLOCK_M)
    if ROW_OFF64:  # BLOCK_M * stride may not fit int32 (host check)
        r_m = r_m.to(tl.int64)
    off_q = r_m[:, None] * stride_qm + o_dq[None, :]
    off_do = r_m[:, None] * stride_dom + o_dv[None, :]

    if HAS_CTX:
        ctx_end = tl.minimum(C, n)
        a0 = tl.maximum(n0, C)
    else:
        ctx_end = 0
        a0 = n0
    # rows [a0, a1) besides the contextual ones
    if HAS_WINDOW:
        a1 = tl.maximum(
            _last_pos_id_le(_ids(n1 - 1, C, M, HAS_CTX, HAS_TARGETS) + W, n, C, M, HAS_CTX, HAS_TARGETS) + 1,
            n1,
        )
        f_hi = _last_pos_id_le(_ids(n0, C, M, HAS_CTX, HAS_TARGETS) + W, n, C, M, HAS_CTX, HAS_TARGETS) + 1
    else:
        a1 = n
        f_hi = n
    a1 = tl.where(n0 >= U, n1, a1)  # target keys: only their own diagonal
    # rows after the block see every key of it when no key is a target and the window allows
    f_hi = tl.where((n1 > U) | (M <= 0), n1, f_hi)
    t1, t2, nb = _phases(a0, a1, n1, f_hi, BLOCK_M)
    if HAS_WINDOW and HAS_FULL:
        # the last F history rows and the targets ignore the window (key blocks before the targets)
        f0 = tl.maximum(tl.maximum(a1, U - F), a0)
        n_full = tl.where(n0 < U, tl.cdiv(tl.maximum(n - f0, 0), BLOCK_M), 0)
    else:
        f0 = n
        n_full = 0
    # ctx_split: the contextual rows in a 16-row step of their own before the loop, with their dQ part
    if CTX_KS > 0:
        tl.static_assert(HAS_CTX and not ATOMIC_DQ)
        tl.static_assert((CTX_KS % BLOCK_N == 0) and (BLOCK_N >= 2 * CTX_ROWS))
        b_qc, b_doc = _ctx_rows(
            p_q0, p_do0, stride_qm, stride_dom, ctx_end, o_dq, o_dv, m_dq, m_dv, PAD_DQ, PAD_DV
        )
        dk, dv = _hstu_bwd_ctx_step(
            dk, dv, b_k, b_v, b_qc, b_doc, DQ, stride_dqm, stride_dqh, i_h, bos, o_j, n0, ctx_end, scale_a, alpha,
            C, W, F, M, o_dq, m_dq, HAS_CTX, HAS_TARGETS, HAS_WINDOW, HAS_FULL, PRECISION, FAST_SIGMOID, SCALE_LAST,
            DQ_DIM, BLOCK_N, CTX_KS,
        )  # fmt: skip
        n_ctx = 0
    else:
        n_ctx = tl.cdiv(ctx_end, BLOCK_M)
    # one software-pipelined loop over the three row ranges in turn: contextual rows [0, ctx_end) (unless split
    # out above), main rows [a0, a1) (unmasked for t in [t1, t2)), window-exempt rows [f0, n)
    for t in range(0, n_ctx + nb + n_full):
        u = t - n_ctx
        in_ctx = u < 0
        in_main = (u >= 0) & (u < nb)
        dk, dv = _hstu_bwd_tile(
            dk,
            dv,
            b_k,
            b_v,
            p_q0,
            p_do0,
            p_dq0,
            off_q,
            off_do,
            stride_qm,
            stride_dom,
            stride_dqm,
            o_j,
            tl.where(in_ctx, t * BLOCK_M, tl.where(in_main, a0 + u * BLOCK_M, f0 + (u - nb) * BLOCK_M)),
            tl.where(in_ctx, 0, tl.where(in_main, a0, f0)),
            tl.where(in_ctx, ctx_end, tl.where(in_main, a1, n)),
            scale_a,
            alpha,
            C,
            W,
            F,
            M,
            o_dq,
            o_dv,
            m_dq,
            m_dv,
            in_ctx | (u < t1) | (u >= t2),
            ATOMIC_DQ,
            HAS_CTX,
            HAS_TARGETS,
            HAS_WINDOW,
            HAS_FULL,
            PAD_DQ,
            PAD_DV,
            PRECISION,
            FAST_SIGMOID,
            SCALE_LAST,
            BLOCK_M,
            # split: the loop never holds a contextual row (session 43, H200, ctx6-w256: dK/dV 0.879 -> 0.859 ms)
            CTX_KS > 0,
        )

    if SCALE_LAST:  # the constant factors the tiles left out (mask._silu_a_ds with UNIT)
        dk = dk * _ds_scale(scale_a, FAST_SIGMOID)
        dv = dv * inv_s
    p_dk = DK + bos * stride_dkn + i_h * stride_dkh + o_j64[:, None] * stride_dkn + o_dq[None, :]
    p_dv = DV + bos * stride_dvn + i_h * stride_dvh + o_j64[:, None] * stride_dvn + o_dv[None, :]
    tl.store(p_dk, dk.to(DK.dtype.element_ty), mask=m_j[:, None] & m_dq[None, :])
    tl.store(p_dv, dv.to(DV.dtype.element_ty), mask=m_j[:, None] & m_dv[None, :])


def _cfg(bm: int, bn: int, warps: int, stages: int) -> triton.Config:
    return triton.Config({"BLOCK_M": bm, "BLOCK_N": bn}, num_warps=warps, num_stages=stages)


_KEY = [
    "AUTOTUNE_LEN", "AUTOTUNE_MEAN", "DQ_DIM", "DV_DIM", "ATOMIC_DQ", "HAS_CTX", "HAS_TARGETS", "HAS_WINDOW", "HAS_FULL", "COMPACT",
    "SCALE_LAST",
]  # fmt: skip
_INTERPRETER = _cfg(16, 32, 4, 1)
# D <= 128, ordered by the H200 sweep (B=256 N=1024): 64 query rows x 128 keys, 8 warps, 3 stages won for
# both the atomic and the plain kernel; 32x128 was within 1-4%.
_BWD_SMALL_D = [
    _cfg(64, 128, 8, 3),
    _cfg(32, 128, 8, 3),
    _cfg(64, 128, 8, 2),
    _cfg(32, 128, 8, 2),
    _cfg(32, 64, 4, 3),
    _cfg(64, 64, 4, 2),
    _cfg(64, 64, 8, 3),
]
_BWD_LARGE_D = [_cfg(32, 64, 4, 1), _cfg(16, 64, 4, 1), _cfg(32, 32, 4, 1)]
_BWD_HUGE_ROWS = [_cfg(16, 32, 4, 1)]  # fp32 at head dims above 128 (fwd.row_class 2)


def _tuned(cfgs: list[triton.Config], atomic: bool):
    reset = ["DQ"] if atomic else None
    return triton.autotune(configs=tuning_configs(cfgs, _INTERPRETER), key=_KEY, reset_to_zero=reset)(
        _hstu_bwd_kernel
    )


_bwd_small_atomic = _tuned(_BWD_SMALL_D, True)
_bwd_large_atomic = _tuned(_BWD_LARGE_D, True)
_bwd_small = _tuned(_BWD_SMALL_D, False)
# With a window the dK/dV kernel without atomics prefers 32 query rows x 64 keys, 4 warps, 3 stages
# (H200 sweep on the C=6 W=256 row, session 3: 1.127 vs 1.455 ms with the first config); the atomic
# kernel's first config also won there (2.064 ms), so only the plain kernel gets a window list.
_BWD_SMALL_D_WINDOW = window_first(_BWD_SMALL_D, 32, 64, 4, 3)
_bwd_small_window = _tuned(_BWD_SMALL_D_WINDOW, False)
# The contextual rows split out of the dQ kernel (``ctx_split``): key blocks of 64 (the split's scratch slots),
# the window list's order
_BWD_SMALL_D_CTX = [c for c in _BWD_SMALL_D_WINDOW if c.kwargs["BLOCK_N"] == 64]
_bwd_small_ctx = _tuned(_BWD_SMALL_D_CTX, False)
_bwd_large = _tuned(_BWD_LARGE_D, False)
_bwd_huge_atomic = _tuned(_BWD_HUGE_ROWS, True)
_bwd_huge = _tuned(_BWD_HUGE_ROWS, False)


# ``ctx_split``: a window batch's contextual rows see every key, so the dQ kernel's first query block walked the
# whole sequence while every other block walks ~W keys (ctx6-w256: C = 6, W = 256, ~2k keys; session 42 round 1,
# H200: the same batch without context ran the dQ kernel 0.711 -> 0.575 ms, dK/dV 0.857 -> 0.778). Instead the
# dK/dV kernel, whose contextual step already forms those rows' ds for its key block, also forms their dQ part
# ``ds^T k`` and leaves it in fp32 in the (not yet written) dQ output; ``_hstu_ctx_dq_reduce`` sums the parts per
# (sequence, head) in key order and the dQ kernel's first block adds the sum and walks only keys < CTX_KS. No extra
# memory (the slots are rows of dQ that the dQ kernel writes afterwards) and a fixed summation order.
# JAGATTN_HSTU_CTX_SPLIT=0 (read at import) turns it off.
CTX_SPLIT = env_choice("JAGATTN_HSTU_CTX_SPLIT", ("auto", "0"), "auto")
# >= every dQ query block (fwd.py's lists, the Gluon kernel), a multiple of every split key block
CTX_KS = 128
CTX_ROWS = tl.constexpr(16)  # the contextual tile of _hstu_bwd_ctx_step; C <= CTX_ROWS rows
# The contextual step's place in the dK/dV kernel, session 42 rounds 3-4 (H200, ctx6-w256, dK/dV kernel ms, same
# process): before the loop (16 rows; taken) 0.875-0.880, after it 1.084, after it with its rows loaded before 1.081,
# as the loop's first step (BLOCK_M rows, its dQ part under a run-time branch) 1.274; the unsplit kernel 0.853-0.858.
# Configs (round 5): 32 x 64 / 4 warps / 3 stages stays first (4 stages 0.869, every other 1.01-2.16 ms).
# the reduce kernel's columns per program and its loop's loads in flight (round 3: 0.018 ms on ctx6-w256; 128
# columns and one stage 0.024, 32 columns 0.019, 16 0.030)
REDUCE_BLOCK_D, REDUCE_STAGES = 64, 3


def ctx_split(q: torch.Tensor, dq: torch.Tensor, contextual_seq_len: int, max_attn_len: int, kernel) -> int:
    """``CTX_KS`` when the backward splits the contextual rows' dQ out of the dQ kernel (see ``CTX_SPLIT``), else 0:
    a window and ``0 < C <= CTX_ROWS``, the Triton dK/dV kernel of the small-row class without atomics (``kernel``:
    the autotuner chosen for the call, the window list, whose 64-key-block subset ``_bwd_small_ctx`` then runs; the
    interpreter's 32-key blocks hold 2 C rows too), fp16 / bf16 with an even
    ``Dq`` and a contiguous dQ output (an fp32 scratch row fits two of its rows exactly, 4-byte aligned). Either grid
    (dense or compact) gives every key block and dQ's first query block a program of its own."""
    if CTX_SPLIT == "0" or max_attn_len <= 0 or not 0 < contextual_seq_len <= CTX_ROWS.value:
        return 0
    if kernel is not _bwd_small_window or q.dtype not in (torch.float16, torch.bfloat16):
        return 0
    if q.shape[2] % 2 or not dq.is_contiguous() or dq.dtype != q.dtype:
        return 0
    return CTX_KS


def _ctx_block_n(kernel) -> int:
    """The key block of every config of an autotuner (the reduce kernel's slot stride)."""
    sizes = {c.kwargs["BLOCK_N"] for c in kernel.configs}
    if len(sizes) != 1:
        raise ValueError(f"ctx_split needs one key block size, got {sorted(sizes)}")
    return sizes.pop()


def _launch_bwd(
    do: torch.Tensor,
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    dq_accum: torch.Tensor | None,
    dk: torch.Tensor,
    dv: torch.Tensor,
    seq_offsets: torch.Tensor,
    num_targets: torch.Tensor | None,
    max_seq_len: int,
    alpha: float,
    inv_scale: float,
    contextual_seq_len: int,
    max_attn_len: int,
    min_full_attn_seq_len: int,
    config: dict | None = None,
    dq_out: torch.Tensor | None = None,
) -> int:
    """dK/dV into ``dk, dv``; with ``dq_accum`` (fp32, zeroed) also dQ by atomic adds. ``config``
    (benchmarks only) pins one ``{"BLOCK_M", "BLOCK_N", "num_warps", "num_stages"}``. ``dq_out``: the dQ output
    the dQ kernel fills afterwards; returns the ``ctx_split`` the dQ kernel must take (0: none, ``dq_out`` unused)."""
    batch = seq_offsets.shape[0] - 1
    h, dq_dim, dv_dim = q.shape[1], q.shape[2], v.shape[2]
    if batch == 0 or max_seq_len == 0 or k.shape[0] == 0:
        return 0
    bdq, bdv = max(16, next_power_of_2(dq_dim)), max(16, next_power_of_2(dv_dim))
    rc = row_class(bdq, bdv, q.element_size())
    atomic = dq_accum is not None
    if atomic:
        kernel = (_bwd_small_atomic, _bwd_large_atomic, _bwd_huge_atomic)[rc]
    else:
        kernel = (_bwd_small_window if max_attn_len > 0 else _bwd_small, _bwd_large, _bwd_huge)[rc]
    dq_t = dq_accum if atomic else dk

    compact = use_compact(k.shape[0], batch, max_seq_len)
    if not atomic and config is None and use_gluon(q, k, v, do, max_attn_len, compact):
        # Hopper, eager: the hand-scheduled Gluon kernel (bwd_gluon.py; dense grid)
        launch_dkdv_gluon(
            do, q, k, v, dk, dv, seq_offsets, num_targets, max_seq_len, alpha, inv_scale, contextual_seq_len,
            max_attn_len, min_full_attn_seq_len, l2_group(batch, h, k.shape[0], max_seq_len), fast_sigmoid(q.dtype),
            scale_last(q.dtype),
        )  # fmt: skip
        return 0
    ks = 0
    if not atomic and config is None and dq_out is not None:
        ks = ctx_split(q, dq_out, contextual_seq_len, max_attn_len, kernel)
        if ks:
            kernel, dq_t = _bwd_small_ctx, dq_out
    order, table = make_schedule(seq_offsets, max_seq_len) if compact else (seq_offsets, seq_offsets)

    def grid(meta):
        if compact:  # sum_b cdiv(n_b, BLOCK_N) <= cdiv(L, BLOCK_N) + B
            return ((triton.cdiv(k.shape[0], meta["BLOCK_N"]) + batch) * h,)
        return (triton.cdiv(max_seq_len, meta["BLOCK_N"]) * batch * h,)

    launcher, meta = kernel, {}
    if config is not None:
        launcher, meta = _hstu_bwd_kernel, dict(config)
    launch(
        launcher, grid,
        q, k, v, do, dq_t, dk, dv, seq_offsets, num_targets if num_targets is not None else seq_offsets, order, table,
        q.stride(0), q.stride(1), k.stride(0), k.stride(1), v.stride(0), v.stride(1),
        do.stride(0), do.stride(1), dq_t.stride(0), dq_t.stride(1), dk.stride(0), dk.stride(1),
        dv.stride(0), dv.stride(1),
        float(alpha), float(inv_scale), int(contextual_seq_len), int(max_attn_len), int(min_full_attn_seq_len),
        batch, h, max_seq_len, l2_group(batch, h, k.shape[0], max_seq_len),
        next_power_of_2(max(max_seq_len, 1)), autotune_mean(k.shape[0], batch),
        DQ_DIM=dq_dim, DV_DIM=dv_dim, ATOMIC_DQ=atomic,
        HAS_CTX=contextual_seq_len > 0, HAS_TARGETS=num_targets is not None,
        HAS_WINDOW=max_attn_len > 0, HAS_FULL=min_full_attn_seq_len > 0, COMPACT=compact,
        PRECISION=precision_of(q.dtype), FAST_SIGMOID=fast_sigmoid(q.dtype), BLOCK_DQ=bdq, BLOCK_DV=bdv,
        SCALE_LAST=scale_last(q.dtype),
        ROW_OFF64=row_off64(q.stride(0), do.stride(0)), CTX_KS=ks, **meta,
    )  # fmt: skip
    if ks:
        bd = min(bdq, REDUCE_BLOCK_D)
        launch(
            _hstu_ctx_dq_reduce, (batch * h, triton.cdiv(bdq, bd)),
            dq_out, seq_offsets, dq_out.stride(0), dq_out.stride(1), int(contextual_seq_len), h,
            DQ_DIM=dq_dim, BLOCK_D=bd, BLOCK_N=_ctx_block_n(kernel), CTX_KS=ks, STAGES=REDUCE_STAGES,
        )  # fmt: skip
    return ks
