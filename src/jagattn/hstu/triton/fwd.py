"""HSTU forward (full and cached) and the deterministic dQ kernel, with their launchers.

One kernel body, ``_hstu_fwd_kernel``, walks the key blocks a query block can see and runs in two
modes: ``MODE == 0`` accumulates ``o = sum_j m_ij silu(alpha q.k_j) / S * v_j``; ``MODE == 1``
accumulates ``dq = alpha sum_j ds_ij k_j`` (the backward's deterministic dQ: a fixed key order,
no atomics; scores are recomputed).

Schedule: a flat grid over (query block, sequence, head) in runs of ``L2_GROUP`` (sequence, head) pairs
(``schedule._grouped``: one pair for dense batches, so a pair's query blocks run together and share its K/V
through L2), heaviest blocks first inside a run (the last query block: causal rows see the most keys),
early exit for blocks past a sequence's end. For one query block ``[m0, m1)`` the visible keys lie in ``[lo, hi)``
(causal bound, window lower bound in id space, whole non-target prefix for contextual rows) plus,
for a block made only of targets, its own diagonal ``[m0, m1)``. Inside ``[lo, hi)`` the blocks
that lie in ``[lo_full, hi_full)`` are visible for every (i, j) pair and skip the mask.

Dtypes: fp16/bf16 with fp32 accumulation; fp32 inputs run with ``input_precision="ieee"`` dots.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from ..._core.env import env_choice, env_flag
from ..._core.launch import launch
from ..._core.triton_utils import autotune_enabled, configs, interpreter_enabled, next_power_of_2
from .bwd_gluon import launch_dq_gluon, use_gluon_dq
from .mask import (
    _ds_scale,
    _first_pos_id_ge,
    _ids,
    _phases,
    _silu_a,
    _silu_a_bf16x2,
    _silu_a_ds,
    _silu_bf16x2,
    _zero_hidden,
)
from .schedule import _find, _grouped, l2_group, make_schedule, use_compact

LOG2E = 1.4426950408889634


@triton.jit
def _load_rows(ptrs, m_row, m_col, COL_MASK: tl.constexpr):
    """Load a [R, D] tile; rows outside ``m_row`` (and, with ``COL_MASK``, padded columns) read as 0."""
    if COL_MASK:
        x = tl.load(ptrs, mask=m_row[:, None] & m_col[None, :], other=0.0)
    else:
        x = tl.load(ptrs, mask=m_row[:, None], other=0.0)
    return x


@triton.jit
def _ctx_slot(P_DQ, row0, r, d, i_h, stride_dqm, stride_dqh, DQ_DIM: tl.constexpr):
    """fp32 pointers to element ``(r, d)`` of a ``[CTX_ROWS, DQ_DIM]`` fp32 block kept in the 2-byte dQ output's
    rows ``row0 + 2 r`` (columns ``d < DQ_DIM / 2``) and ``row0 + 2 r + 1`` (the rest) of head ``i_h``: one fp32 row
    fills two rows of the head's even number of 2-byte columns (``ctx_split`` checks the layout)."""
    HALF: tl.constexpr = DQ_DIM // 2
    p32 = P_DQ.to(tl.pointer_type(tl.float32))
    row = (row0 + 2 * r + (d >= HALF).to(tl.int32)).to(tl.int64)
    return p32 + row * (stride_dqm // 2) + i_h * (stride_dqh // 2) + d % HALF


@triton.jit
def _hstu_fwd_tile(
    acc,
    b_q,
    b_do,
    p_k0,
    p_v0,
    off_k,
    off_v,
    stride_kn,
    stride_vn,
    o_i,
    start_n,
    range_hi,
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
    MODE: tl.constexpr,
    HAS_CTX: tl.constexpr,
    HAS_TARGETS: tl.constexpr,
    HAS_WINDOW: tl.constexpr,
    HAS_FULL: tl.constexpr,
    PAD_DQ: tl.constexpr,
    PAD_DV: tl.constexpr,
    PRECISION: tl.constexpr,
    FAST_SIGMOID: tl.constexpr,
    PACKED: tl.constexpr,
    SCALE_LAST: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    r = tl.arange(0, BLOCK_N)
    o_j = start_n + r
    m_j = (r < range_hi - start_n) & (r >= -start_n)
    # [BN, BDQ], [BN, BDV]; keys past range_hi read as 0 and contribute nothing. The block's first key as a
    # scalar pointer plus loop-invariant in-tile offsets (session 19: no 64-bit multiply per row and step)
    col0 = start_n.to(tl.int64)
    b_k = _load_rows(p_k0 + col0 * stride_kn + off_k, m_j, m_dq, PAD_DQ)
    b_v = _load_rows(p_v0 + col0 * stride_vn + off_v, m_j, m_dv, PAD_DV)
    b_qk = tl.dot(b_q, tl.trans(b_k), input_precision=PRECISION)  # [BM, BN] = <q_i, k_j>
    if MODE == 0:  # b_s = silu(alpha qk) / S, against v
        if PACKED and SCALE_LAST:  # bf16 silu(alpha qk) from packed bf16x2 tanh and FMA; 1/S at the end
            b_s = _silu_bf16x2(b_qk * (0.5 * alpha))
        elif PACKED:  # bf16 silu / S straight from packed bf16x2 tanh and FMA (see mask._silu_a_bf16x2)
            b_s = _silu_a_bf16x2(b_qk * (0.5 * alpha), b_qk * (0.5 * scale_a))
        else:  # SCALE_LAST: times S
            b_s = _silu_a(b_qk, alpha, scale_a, FAST_SIGMOID, SCALE_LAST)
        b_rhs = b_v
    else:  # b_s = alpha ds (SCALE_LAST: / ds_scale), against k
        b_dp = tl.dot(b_do, tl.trans(b_v), input_precision=PRECISION)  # [BM, BN] = <do_i, v_j>
        _, b_s = _silu_a_ds(b_qk, b_dp, alpha, scale_a, FAST_SIGMOID, SCALE_LAST)
        b_rhs = b_k
    if masked:  # edge blocks (a run-time branch in the one pipelined loop)
        b_s = _zero_hidden(  # keys outside the range need no mask term: they load as zeros
            b_s,
            o_i[:, None],
            o_j[None, :],
            C,
            W,
            F,
            M,
            HAS_CTX,
            HAS_TARGETS,
            HAS_WINDOW,
            HAS_FULL,
        )
    acc = tl.dot(b_s.to(b_rhs.dtype), b_rhs, acc, input_precision=PRECISION)
    return acc


@triton.jit
def _hstu_fwd_kernel(
    Q,
    K,
    V,
    DO,
    OUT,
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
    stride_om,
    stride_oh,
    alpha,
    inv_s,
    C,
    W,
    F,
    DELTA,
    B,
    H,
    MAX_ROWS,
    L2_GROUP,
    AUTOTUNE_LEN,
    AUTOTUNE_MEAN,
    DQ: tl.constexpr,
    DV: tl.constexpr,
    MODE: tl.constexpr,
    IS_CACHED: tl.constexpr,
    HAS_CTX: tl.constexpr,
    HAS_TARGETS: tl.constexpr,
    HAS_WINDOW: tl.constexpr,
    HAS_FULL: tl.constexpr,
    COMPACT: tl.constexpr,
    PRECISION: tl.constexpr,
    FAST_SIGMOID: tl.constexpr,
    PACKED: tl.constexpr,
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
        # compact list: longest sequences first within each block index, heaviest index first
        i_h = pid % H
        i_b, i_mb, valid = _find(TABLE, ORDER, pid // H, MAX_ROWS, BLOCK_M, False)
        if not valid:
            return
    else:
        # runs of L2_GROUP (sequence, head) pairs, heaviest (last) query blocks first within a run
        nmb = tl.cdiv(MAX_ROWS, BLOCK_M)
        pair, k = _grouped(pid, nmb, B * H, L2_GROUP)
        i_h = pair % H
        i_b = pair // H
        i_mb = nmb - 1 - k
    bos = tl.load(SEQ_OFFSETS + i_b).to(tl.int64)
    eos = tl.load(SEQ_OFFSETS + i_b + 1).to(tl.int64)
    n = (eos - bos).to(tl.int32)
    if IS_CACHED:
        q_row0 = i_b.to(tl.int64) * DELTA
        nrows = DELTA
        pos0 = n - DELTA
    else:
        q_row0 = bos
        nrows = n
        pos0 = n * 0
    r0 = i_mb * BLOCK_M
    if r0 >= nrows:
        return
    if HAS_TARGETS:
        # clamped so that a bad num_targets (unchecked on GPU) cannot move a load out of bounds
        T = tl.minimum(tl.maximum(tl.load(NUM_TARGETS + i_b).to(tl.int32), 0), n)
    else:
        T = 0
    U = n - T
    if HAS_CTX:
        M = U - C + 1
    else:
        M = U

    o_r = r0 + tl.arange(0, BLOCK_M)
    m_r = o_r < nrows
    o_i = pos0 + o_r  # positions in the sequence
    o_dq = tl.arange(0, BLOCK_DQ)
    o_dv = tl.arange(0, BLOCK_DV)
    m_dq = o_dq < DQ
    m_dv = o_dv < DV
    PAD_DQ: tl.constexpr = BLOCK_DQ != DQ
    PAD_DV: tl.constexpr = BLOCK_DV != DV
    p_q = Q + q_row0 * stride_qm + i_h * stride_qh + o_r[:, None].to(tl.int64) * stride_qm + o_dq[None, :]
    b_q = _load_rows(p_q, m_r, m_dq, PAD_DQ)
    if MODE == 1:
        p_do = (
            DO
            + q_row0 * stride_dom
            + i_h * stride_doh
            + o_r[:, None].to(tl.int64) * stride_dom
            + o_dv[None, :]
        )
        b_do = _load_rows(p_do, m_r, m_dv, PAD_DV)
        acc = tl.zeros([BLOCK_M, BLOCK_DQ], dtype=tl.float32)
    else:
        b_do = b_q
        acc = tl.zeros([BLOCK_M, BLOCK_DV], dtype=tl.float32)
    p_k0 = K + bos * stride_kn + i_h * stride_kh
    p_v0 = V + bos * stride_vn + i_h * stride_vh
    r_n = tl.arange(0, BLOCK_N)
    if ROW_OFF64:  # BLOCK_N * stride may not fit int32 (host check)
        r_n = r_n.to(tl.int64)
    off_k = r_n[:, None] * stride_kn + o_dq[None, :]
    off_v = r_n[:, None] * stride_vn + o_dv[None, :]
    scale_a = alpha * inv_s

    # visible key range [lo, hi) of the rows [m0, m1); C == 0 without context
    m0 = pos0 + r0
    m1 = tl.minimum(m0 + BLOCK_M, pos0 + nrows)
    ctx_block = m0 < C  # contextual rows see every non-target key
    target_block = (m0 >= U) & (m0 >= C)  # only targets: non-target prefix + own diagonal
    # bwd.ctx_split: the contextual rows' keys from CTX_KS on come summed from the dK/dV kernel
    if CTX_KS > 0:
        tl.static_assert((MODE == 1) and (BLOCK_M <= CTX_KS))
        hi = tl.where(ctx_block, tl.maximum(tl.minimum(U, CTX_KS), m1), tl.where(target_block, U, m1))
    else:
        hi = tl.where(ctx_block, tl.maximum(U, m1), tl.where(target_block, U, m1))
    lo = n * 0
    lo_full = n * 0
    if HAS_WINDOW:
        keep = m0 >= C
        if HAS_FULL:
            keep = keep & (m1 - 1 < U - F)  # no row of the block ignores the window
        lo = tl.where(keep, _first_pos_id_ge(_ids(m0, C, M, HAS_CTX, HAS_TARGETS) - W, C, HAS_CTX), 0)
        lo_full = _first_pos_id_ge(_ids(m1 - 1, C, M, HAS_CTX, HAS_TARGETS) - W, C, HAS_CTX)
        if HAS_FULL:
            lo_full = tl.where(m0 >= U - F, 0, lo_full)
    # keys before the block's first row and before the first target are visible to every row
    hi_full = tl.where(M <= 0, 0, tl.minimum(m0, U))

    t1, t2, nb = _phases(lo, hi, lo_full, hi_full, BLOCK_N)
    # one software-pipelined loop over the main blocks [lo, hi) and then, for a block of targets,
    # its own diagonal [m0, m1); blocks outside [t1, t2) apply the mask (a run-time branch)
    n_diag = tl.where(target_block, tl.cdiv(m1 - m0, BLOCK_N), 0)
    for t in range(0, nb + n_diag):
        main = t < nb
        acc = _hstu_fwd_tile(
            acc,
            b_q,
            b_do,
            p_k0,
            p_v0,
            off_k,
            off_v,
            stride_kn,
            stride_vn,
            o_i,
            tl.where(main, lo + t * BLOCK_N, m0 + (t - nb) * BLOCK_N),
            tl.where(main, hi, m1),
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
            (t < t1) | (t >= t2),
            MODE,
            HAS_CTX,
            HAS_TARGETS,
            HAS_WINDOW,
            HAS_FULL,
            PAD_DQ,
            PAD_DV,
            PRECISION,
            FAST_SIGMOID,
            PACKED,
            SCALE_LAST,
            BLOCK_N,
        )

    if SCALE_LAST:  # the constant factors the tiles left out (mask._silu_a / _silu_a_ds with UNIT)
        if MODE == 1:
            acc = acc * _ds_scale(scale_a, FAST_SIGMOID)
        else:
            acc = acc * inv_s
    if MODE == 1:
        if CTX_KS > 0:  # the contextual rows' sum over the keys from CTX_KS on (bwd._hstu_ctx_dq_reduce)
            # (no sum for a sequence without key blocks past CTX_KS)
            m_ctx = o_r < tl.where(n > CTX_KS, C, 0)
            p_sum = _ctx_slot(OUT, q_row0, o_r[:, None], o_dq[None, :], i_h, stride_om, stride_oh, DQ)
            acc += tl.load(p_sum, mask=m_ctx[:, None] & m_dq[None, :], other=0.0)
        p_o = (
            OUT + q_row0 * stride_om + i_h * stride_oh + o_r[:, None].to(tl.int64) * stride_om + o_dq[None, :]
        )
        tl.store(p_o, acc.to(OUT.dtype.element_ty), mask=m_r[:, None] & m_dq[None, :])
    else:
        p_o = (
            OUT + q_row0 * stride_om + i_h * stride_oh + o_r[:, None].to(tl.int64) * stride_om + o_dv[None, :]
        )
        tl.store(p_o, acc.to(OUT.dtype.element_ty), mask=m_r[:, None] & m_dv[None, :])


def autotune_mean(total_rows, batch) -> int:
    """Autotune key part ``AUTOTUNE_MEAN``: the mean sequence length rounded up to a power of two, so a
    heavy-tailed batch (the recsys row: max 2048, mean ~400) is tuned apart from a dense one with the same
    ``max_seq_len`` (``AUTOTUNE_LEN``) instead of reusing its tiles. 0 for symbolic sizes (torch.compile
    with dynamic shapes): a value computed from them would add a guard per total length."""
    if not isinstance(total_rows, int) or not isinstance(batch, int):
        return 0
    return next_power_of_2(max(1, total_rows // max(batch, 1)))


def tuning_configs(gpu: list[triton.Config], interpreter: triton.Config) -> list[triton.Config]:
    """Autotune configs; ``JAGATTN_HSTU_AUTOTUNE=0`` (or ``JAGATTN_AUTOTUNE=0``) keeps only the first
    GPU config (fast compiles for tests on the device, where every flag combination would otherwise
    be tuned)."""
    if not autotune_enabled("hstu"):
        gpu = gpu[:1]
    return configs(gpu, interpreter)


def _cfg(bm: int, bn: int, warps: int, stages: int) -> triton.Config:
    return triton.Config({"BLOCK_M": bm, "BLOCK_N": bn}, num_warps=warps, num_stages=stages)


_KEY = [
    "AUTOTUNE_LEN", "AUTOTUNE_MEAN", "DQ", "DV", "MODE", "IS_CACHED", "HAS_CTX", "HAS_TARGETS", "HAS_WINDOW", "HAS_FULL", "COMPACT",
    "PACKED", "SCALE_LAST",
]  # fmt: skip
_INTERPRETER = _cfg(32, 16, 4, 1)
# D <= 128; first = the config without autotuning. Ordered by the H200 sweep (benchmarks/hstu_triton.py
# --sweep, B=256 N=1024): 128x32/4 warps/3 stages won, the 8-warp 128x64 tiles were 7-12% slower.
_FWD_SMALL_D = [
    _cfg(128, 32, 4, 3),
    _cfg(128, 64, 8, 3),
    _cfg(128, 64, 8, 4),
    _cfg(128, 128, 8, 3),
    _cfg(128, 32, 4, 4),
    _cfg(64, 64, 4, 3),
    _cfg(64, 32, 4, 3),
    _cfg(64, 128, 4, 2),
]
# Long rows (at least LONG_ROWS queries per sequence, no window, 2-byte inputs): 256 query rows on 8 warps
# first (each warpgroup runs the 128-row tile of the list above, and the two share every K/V tile). H200
# probe, session 12 round 2 (one-loop kernels): B64-N4096 2.636 vs 2.844 ms (1.08x); B128-N2048 1.583 vs
# 1.596 (equal), B256-N1024 0.93x and the window row 0.62x, hence the bound.
LONG_ROWS = 4096
_FWD_SMALL_D_LONG = [_cfg(256, 32, 8, 3), *_FWD_SMALL_D]
_FWD_LARGE_D = [_cfg(64, 64, 4, 2), _cfg(64, 32, 4, 2), _cfg(32, 64, 4, 2), _cfg(64, 64, 8, 1)]
_DQ_SMALL_D = [
    _cfg(128, 64, 8, 3),
    _cfg(128, 32, 4, 3),
    _cfg(128, 128, 8, 2),
    _cfg(64, 32, 4, 3),
    _cfg(128, 64, 8, 2),
    _cfg(64, 64, 4, 3),
]
_DQ_LARGE_D = [_cfg(64, 32, 4, 2), _cfg(32, 64, 4, 2), _cfg(32, 32, 4, 1)]
# fp32 rows over 512 bytes (head dims above 128: the fp32 route of tiny fp16/bf16 batches,
# _core/precision.py, and fp32 inputs): one small tile; the lists above overflow shared memory there
_FWD_HUGE_ROWS = [_cfg(32, 32, 4, 1)]


def row_class(block_dq: int, block_dv: int, itemsize: int) -> int:
    """Which config lists a launch takes, from its padded head dims and bytes per element: 0 for rows of
    at most 256 bytes (head dims <= 128 in fp16/bf16, <= 64 in fp32), 1 up to 512 (the "large" lists:
    256 in fp16/bf16, 128 in fp32), 2 above (fp32 at 256)."""
    row = max(block_dq, block_dv) * itemsize
    return 0 if row <= 256 else 1 if row <= 512 else 2


def window_first(cfgs: list[triton.Config], bm: int, bn: int, warps: int, stages: int) -> list[triton.Config]:
    """``cfgs`` with the config ``(bm, bn, warps, stages)`` moved to the front (the same set: only the
    choice without autotuning changes)."""
    hit = [
        c
        for c in cfgs
        if (c.kwargs["BLOCK_M"], c.kwargs["BLOCK_N"], c.num_warps, c.num_stages) == (bm, bn, warps, stages)
    ]
    if len(hit) != 1:
        raise ValueError(f"config {(bm, bn, warps, stages)} is not in the list")
    return hit + [c for c in cfgs if c is not hit[0]]


# With a window (max_attn_len > 0) every key loop is short: the H200 sweep on the C=6 W=256 B=128 N=2048
# row (session 3, benchmarks/results/2026-11-21-s3-h200-hstu-window-sweep.json) picked 64x32, 4 warps,
# 3 stages for the forward (0.838 vs 0.933 ms with the first no-window config) and for the dQ kernel
# (1.089 vs 1.250 ms). Separate autotuners, so the first config (no autotuning) fits each case.
_FWD_SMALL_D_WINDOW = window_first(_FWD_SMALL_D, 64, 32, 4, 3)
# Short rows (max_seq_len, cached: delta, at most SHORT_ROWS, no window): the same 64x32 / 4-warp / 3-stage tile
# first. H100 probe after the grid order of session 18 (rounds 2 and 4, benchmarks/hstu_probe.py): B256-N1024
# forward 0.703 vs 0.735 ms and 0.711 vs 0.749 (1.045x, 1.053x); on B128-N2048 it lost (0.947x, 0.856x), hence
# the bound. Less of each 64-row block is masked on the diagonal, and three programs fit on an SM.
SHORT_ROWS = 1024
_FWD_SMALL_D_SHORT = window_first(_FWD_SMALL_D, 64, 32, 4, 3)
_DQ_SMALL_D_WINDOW = window_first(_DQ_SMALL_D, 64, 32, 4, 3)


def _tuned_dq(cfgs: list[triton.Config]):
    """The dQ kernel's autotuner. ``restore_value=["OUT"]``: with the contextual split (``bwd.ctx_split``) the kernel
    reads the contextual rows' partial sum from its own output's rows [0, 2 C) and then overwrites them, so each
    config the autotuner times on the first call of a key must start from the output as the backward left it (without
    it the final launch added the timing runs' results: dq of those rows wrong on the first GPU call of a shape,
    session 45's SPEC audit; not idempotent, see test_hstu_dq_autotune_restores_its_output)."""
    return triton.autotune(configs=tuning_configs(cfgs, _INTERPRETER), key=_KEY, restore_value=["OUT"])(
        _hstu_fwd_kernel
    )


_fwd_small = triton.autotune(configs=tuning_configs(_FWD_SMALL_D, _INTERPRETER), key=_KEY)(_hstu_fwd_kernel)
_fwd_small_long = triton.autotune(configs=tuning_configs(_FWD_SMALL_D_LONG, _INTERPRETER), key=_KEY)(
    _hstu_fwd_kernel
)
_fwd_small_short = triton.autotune(configs=tuning_configs(_FWD_SMALL_D_SHORT, _INTERPRETER), key=_KEY)(
    _hstu_fwd_kernel
)
_fwd_small_window = triton.autotune(configs=tuning_configs(_FWD_SMALL_D_WINDOW, _INTERPRETER), key=_KEY)(
    _hstu_fwd_kernel
)
_dq_small_window = _tuned_dq(_DQ_SMALL_D_WINDOW)
_fwd_large = triton.autotune(configs=tuning_configs(_FWD_LARGE_D, _INTERPRETER), key=_KEY)(_hstu_fwd_kernel)
_dq_small = _tuned_dq(_DQ_SMALL_D)
_dq_large = _tuned_dq(_DQ_LARGE_D)
_fwd_huge = triton.autotune(configs=tuning_configs(_FWD_HUGE_ROWS, _INTERPRETER), key=_KEY)(_hstu_fwd_kernel)
_dq_huge = _tuned_dq(_FWD_HUGE_ROWS)


def fast_sigmoid(dtype: torch.dtype) -> bool:
    """tanh.approx sigmoid for bf16 on a GPU (see ``mask._sigmoid``); ``JAGATTN_HSTU_FAST_SIGMOID=0`` disables it."""
    return (
        dtype == torch.bfloat16 and not interpreter_enabled() and env_flag("JAGATTN_HSTU_FAST_SIGMOID", True)
    )


def packed_silu(dtype: torch.dtype) -> bool:
    """Forward scores in packed bf16x2 (``tanh.approx.bf16x2`` + ``fma.rn.bf16x2``, two scores per
    instruction) for bf16 on a GPU; ``JAGATTN_HSTU_PACKED=0`` (or ``JAGATTN_HSTU_FAST_SIGMOID=0``)
    disables it."""
    return fast_sigmoid(dtype) and env_flag("JAGATTN_HSTU_PACKED", True)


# The packed bf16x2 scores round h = alpha qk / 2 to bf16 before tanh.approx.bf16x2 and the FMA, so one
# score's silu carries ~2-3x the error of the bf16 reference's. Over many visible keys the row sums average
# it out (every production-size gpu test passes); a row that sees a handful of keys shows it: the GPU fuzz
# (session 14 rounds 13-15: seeds 3006, 3023, 3033, lengths like [1, 1] or [1, 1, 4], a window of 4) failed
# the SPEC rule with it and passed with JAGATTN_HSTU_PACKED=0. The forward therefore packs only batches whose
# mean sequence length and window (when set) reach PACKED_MIN_KEYS; the others take the fp32 tanh.approx.
PACKED_MIN_KEYS = 256


def packed_for_shape(total_rows, batch, max_attn_len: int) -> bool:
    """Whether a batch is large enough for the packed bf16x2 forward scores (see ``PACKED_MIN_KEYS``): mean
    sequence length ``total_rows / batch`` and a set window ``max_attn_len`` both at least PACKED_MIN_KEYS.
    Host ints only (no sync); symbolic sizes (torch.compile with dynamic shapes) keep the fp32 scores."""
    if not isinstance(total_rows, int) or not isinstance(batch, int) or batch <= 0:
        return False
    if 0 < max_attn_len < PACKED_MIN_KEYS:
        return False
    return total_rows >= PACKED_MIN_KEYS * batch


def long_rows(rows, dtype: torch.dtype) -> bool:
    """Whether the forward takes the long-rows config list (``_FWD_SMALL_D_LONG``): at least ``LONG_ROWS``
    query rows per sequence (``max_seq_len``, or ``delta`` when cached) in fp16/bf16 (fp32's 256-row
    tile would not fit in shared memory). Symbolic sizes keep the plain list (no guard)."""
    return isinstance(rows, int) and rows >= LONG_ROWS and dtype in (torch.float16, torch.bfloat16)


def short_rows(rows) -> bool:
    """Whether the forward takes the short-rows config list (``_FWD_SMALL_D_SHORT``): at most ``SHORT_ROWS``
    query rows per sequence (``max_seq_len``, or ``delta`` when cached). Symbolic sizes keep the plain list
    (no guard)."""
    return isinstance(rows, int) and rows <= SHORT_ROWS


def scale_last(dtype: torch.dtype) -> bool:
    """Whether the kernels leave the constant factors of the scores (``1/S``; ``alpha/S`` or ``alpha/(2S)``
    for ``ds``) to their fp32 accumulators, applied once at the end: two multiplies less per score in every
    kernel, one conversion less in the packed bf16 forward. bf16 by default (fp32's exponent range: the
    unscaled ``silu(s)`` and ``ds`` cannot overflow where the scaled ones did not); never fp16, whose
    range (65504) the unscaled values could leave. ``JAGATTN_HSTU_SCALE_LAST=0`` disables it, ``1``
    also applies it to fp32 (the CPU tests of the arithmetic)."""
    mode = env_choice("JAGATTN_HSTU_SCALE_LAST", ("auto", "0", "1"), "auto")
    if mode == "0" or dtype == torch.float16:
        return False
    return dtype == torch.bfloat16 or (mode == "1" and dtype == torch.float32)


# every autotune list's largest row or key block (the in-tile offsets `block row * stride + column`)
_MAX_BLOCK_ROWS = 256


def row_off64(*row_strides) -> bool:
    """Whether the kernels' loop-invariant in-tile offsets (``row * stride + column`` for the rows of one
    block) need int64: a row stride of 8M elements or more (a strided view); symbolic strides count as
    large. Everything else (the sequence start, the block's first row) is int64 anyway."""
    return not all(isinstance(s, int) and (s + 1) * _MAX_BLOCK_ROWS < 2**31 for s in row_strides)


def precision_of(dtype: torch.dtype) -> str:
    """Dot precision: fp32 inputs run in IEEE fp32 (no tf32), fp16/bf16 are exact products anyway."""
    return "ieee" if dtype == torch.float32 else "tf32"


def _launch(
    mode: int,
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    do: torch.Tensor | None,
    out: torch.Tensor,
    seq_offsets: torch.Tensor,
    num_targets: torch.Tensor | None,
    max_seq_len: int,
    alpha: float,
    inv_scale: float,
    contextual_seq_len: int,
    max_attn_len: int,
    min_full_attn_seq_len: int,
    delta: int | None,
    config: dict | None = None,
    ctx_ks: int = 0,
) -> None:
    """Launch the forward (``mode == 0``) or deterministic dQ (``mode == 1``) kernel into ``out``.

    ``config`` (benchmarks only): ``{"BLOCK_M", "BLOCK_N", "num_warps", "num_stages"}`` runs the
    kernel with that one config instead of the autotuned choice. ``ctx_ks``: dQ only, what the dK/dV launch
    returned (``bwd.ctx_split``: the contextual rows' keys from ``ctx_ks`` on are already summed in ``out``)."""
    batch = seq_offsets.shape[0] - 1
    h, dq_dim = q.shape[1], q.shape[2]
    dv_dim = v.shape[2]
    rows = max_seq_len if delta is None else delta
    if batch == 0 or rows == 0 or out.numel() == 0:
        return
    bdq, bdv = max(16, next_power_of_2(dq_dim)), max(16, next_power_of_2(dv_dim))
    rc = row_class(bdq, bdv, q.element_size())
    window = max_attn_len > 0
    if mode == 0:
        kernel = (_fwd_small_window if window else _fwd_small, _fwd_large, _fwd_huge)[rc]
        if kernel is _fwd_small and long_rows(rows, q.dtype):
            kernel = _fwd_small_long
        elif kernel is _fwd_small and short_rows(rows):
            kernel = _fwd_small_short
    else:
        kernel = (_dq_small_window if window else _dq_small, _dq_large, _dq_huge)[rc]
    do_t = q if do is None else do
    if delta is not None and num_targets is None:
        # ptxas (Triton 3.6, sm_90a) segfaults on the cached kernel compiled with HAS_TARGETS=False
        # (seen on H200 for D=32 and D=128, both sigmoid paths). All-zero targets give the same
        # mask as None (SPEC section 2: M is then the same id), so take the compiling variant.
        num_targets = torch.zeros(batch, dtype=torch.int32, device=q.device)

    compact = delta is None and use_compact(q.shape[0], batch, rows)
    if mode == 1 and config is None and delta is None and use_gluon_dq(q, k, v, do_t, compact):
        # Hopper, eager: the hand-scheduled Gluon dQ kernel (bwd_gluon.py; dense grid)
        launch_dq_gluon(
            do_t, q, k, v, out, seq_offsets, num_targets, rows, alpha, inv_scale, contextual_seq_len, max_attn_len,
            min_full_attn_seq_len, l2_group(batch, h, q.shape[0], rows), fast_sigmoid(q.dtype), scale_last(q.dtype),
            ctx_ks,
        )  # fmt: skip
        return
    order, table = make_schedule(seq_offsets, rows) if compact else (seq_offsets, seq_offsets)

    def grid(meta):
        if compact:  # sum_b cdiv(n_b, BLOCK_M) <= cdiv(L, BLOCK_M) + B
            return ((triton.cdiv(q.shape[0], meta["BLOCK_M"]) + batch) * h,)
        return (triton.cdiv(rows, meta["BLOCK_M"]) * batch * h,)

    launcher, meta = kernel, {}
    if config is not None:
        launcher, meta = _hstu_fwd_kernel, dict(config)
    launch(
        launcher, grid,
        q, k, v, do_t, out, seq_offsets, num_targets if num_targets is not None else seq_offsets, order, table,
        q.stride(0), q.stride(1), k.stride(0), k.stride(1), v.stride(0), v.stride(1),
        do_t.stride(0), do_t.stride(1), out.stride(0), out.stride(1),
        float(alpha), float(inv_scale), int(contextual_seq_len), int(max_attn_len), int(min_full_attn_seq_len),
        int(delta or 0), batch, h, rows, l2_group(batch, h, q.shape[0], rows),  # cached: q has batch * delta rows
        next_power_of_2(max(rows, 1)), autotune_mean(q.shape[0], batch),
        DQ=dq_dim, DV=dv_dim, MODE=mode, IS_CACHED=delta is not None,
        HAS_CTX=contextual_seq_len > 0, HAS_TARGETS=num_targets is not None,
        HAS_WINDOW=max_attn_len > 0, HAS_FULL=min_full_attn_seq_len > 0, COMPACT=compact,
        PRECISION=precision_of(q.dtype), FAST_SIGMOID=fast_sigmoid(q.dtype), BLOCK_DQ=bdq, BLOCK_DV=bdv,
        PACKED=mode == 0 and packed_silu(q.dtype) and packed_for_shape(k.shape[0], batch, max_attn_len),
        SCALE_LAST=scale_last(q.dtype), ROW_OFF64=row_off64(k.stride(0), v.stride(0)), CTX_KS=ctx_ks,
        **meta,
    )  # fmt: skip
