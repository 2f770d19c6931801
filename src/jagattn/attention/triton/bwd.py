"""Backward kernels of varlen softmax attention and their launcher.

FlashAttention-2 style (scores recomputed from q, k and the saved lse), default path:

1. ``_attention_bwd_dq_kernel``: one program per (query block, query head) computes
   ``delta = rowsum(o * do) - dlse`` for its rows (``dlse`` is the gradient flowing into the
   returned lse) and ``lse2`` (lse in base 2, ``+inf`` where no key is visible), stores both for
   step 2 in the row-padded layout of ``row_stats_rows``, then recomputes p and dp over the visible
   key blocks (K/V tiles through TMA descriptors where ``dq_use_tma``) and accumulates dQ in registers:
   no float atomics, bit-reproducible (``deterministic=True``).
2. ``_attention_bwd_dkdv_kernel``: one program per (key block, kv head). dK/dV live in fp32
   registers while the program walks one flat loop over (query head of its GQA group, query block
   that can see the key block), so K/V are never expanded and dK/dV are written once, without
   atomics.
   On Hopper, in eager calls, ``bwd_gluon.py``'s Gluon kernel does the same work with hand-placed
   wgmma waits (1.13-1.24x this kernel's speed, bit for bit its results; ``bwd_gluon.use_gluon``).

Alternative path (``JAGATTN_ATTN_DQ=atomic``, never with ``deterministic=True``):
``_attention_bwd_preprocess_kernel`` computes delta and lse2, and the dK/dV kernel (its own config list,
``_attention_bwd_dkdv_dq_kernel``) also adds ``dQ^T = K^T dS^T`` into an fp32 buffer with atomics:
5 matmul units instead of 7. The buffer covers a chunk of query heads (``dq_chunk_kv_heads``), one
launch per chunk, then a cast into dQ. Measured on an H200 (Triton 3.6, bf16, D=128, 32k tokens,
benchmarks/results/2026-11-21-s3-h200-attention-dq-sweep.jsonl): with the memory-capped chunks it
is 6-59% slower than the default on every suite row (a chunk of one kv head leaves too few
programs: 11.6 vs 8.1 ms at mean 8192, Hkv 4); with one chunk (a full ``[Tq, Hq, D]`` fp32 buffer,
+256 MiB, above FlexAttention's peak) it is 1% faster at mean 8192 and 9-12% slower at mean 512.
The 5-unit kernel runs at ~48% of the matmul peak against 54% (dK/dV) and 76% (dQ) for the two
kernels of the default: the extra fp32 tile spills (255 registers) and the atomics cost more than
the recompute saves. Session 24 (H200) added each fp32 dQ tile with one bulk TMA reduction
(``cp.reduce.async.bulk`` from shared memory, q/dO through descriptors) instead: slower still than the
per-element atomics (backward 0.64-0.77x the default against 0.75-0.84x, one fp32 chunk, five rows;
``benchmarks/rounds/s24_round3_dq_tma_reduce.diff``, not kept). The dQ traffic of a fused kernel, one
fp32 ``[BLOCK_M, D]`` reduction per (key block, query block) pair, is what limits it, not the issue cost.

Rows with no visible key have ``lse = -inf``; their lse2 is ``+inf`` so ``p = 0`` and their
gradients are exact zeros.

Why the row-padded lse2/delta (session 17): the dK/dV loop reads a ``BLOCK_M`` vector of each per
step, in the replicated layout of the score tile's columns. From a ``[Hq, Tq]`` buffer at the
sequence's own offset (unaligned) and with the rows clamped to the sequence, Triton 3.6 issued one
4-byte ``cp.async`` per element (32 per thread per step, each with its own 64-bit address) and the
kernel scaled lse and tested ``-inf`` per element; from the padded buffer (every sequence starts
``ROW_PAD``-aligned, padding rows hold ``lse2 = +inf``, ``delta = 0``) the loads are aligned, unclamped
and 8 bytes wide, and lse2 is used as is. Nsight Compute on the H100 (mean 8192, Hkv 16): dK/dV
kernel 4.65-4.76 -> 4.10 ms, 1.47 -> 1.00 G instructions; gradients bitwise the same.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from ..._core.alloc import new_empty
from ..._core.env import env_choice, env_flag, env_positive_int
from ..._core.launch import launch
from ..._core.tma import tma_loads_ok
from ..._core.triton_utils import configs
from . import bwd_gluon
from .bwd_gluon import launch_dkdv_gluon, launch_dq_gluon, use_gluon
from .common import (
    SMEM_LIMIT,
    _block_ranges,
    _kv_bases,
    _load_tile,
    _tanh,
    fitting_configs,
    num_slots,
)
from .fwd import _itemsize, dot_precision, head_block, seq_bucket, softcap_args, window_args

# ---------------------------------------------------------------------------------------------
# 1. delta


@triton.jit(do_not_specialize=["B"])
def _attention_bwd_preprocess_kernel(
    O,
    DO,
    LSE,
    DLSE,
    DELTA,
    LSE2,
    CU_Q,
    B,
    stride_ot,
    stride_oh,
    stride_dot,
    stride_doh,
    stride_lse_h,
    stride_dlse_h,
    stride_pad_h,
    DV: tl.constexpr,
    BLOCK_DV: tl.constexpr,
    HAS_DLSE: tl.constexpr,
    ROW_PAD: tl.constexpr,
):
    """delta and lse2 of ``ROW_PAD`` rows of one sequence, padding rows included (the atomic path's
    first step; the default path has the dQ kernel write them). Layout: ``row_stats_rows``."""
    i_slot = tl.program_id(0)
    i_h = tl.program_id(1)
    # the sequence owning this slot: binary search over CU_Q (inlined, see common.py for why)
    i_b = i_slot * 0
    hi_b = i_b + B
    while hi_b - i_b > 1:
        mid = (i_b + hi_b) // 2
        go_right = tl.load(CU_Q + mid).to(tl.int32) // ROW_PAD + mid <= i_slot
        i_b = tl.where(go_right, mid, i_b)
        hi_b = tl.where(go_right, hi_b, mid)
    bos_q = tl.load(CU_Q + i_b).to(tl.int32)
    m0 = (i_slot - (bos_q // ROW_PAD + i_b)) * ROW_PAD
    lq = tl.load(CU_Q + i_b + 1).to(tl.int32) - bos_q
    if m0 >= lq:
        return
    o_m = m0 + tl.arange(0, ROW_PAD)
    o_dv = tl.arange(0, BLOCK_DV)
    m_m = o_m < lq
    rows = (bos_q + o_m).to(tl.int64)[:, None]
    b_o = _load_tile(
        O + rows * stride_ot + i_h * stride_oh + o_dv[None, :], m_m, o_dv < DV, True, BLOCK_DV != DV
    )
    b_do = _load_tile(
        DO + rows * stride_dot + i_h * stride_doh + o_dv[None, :], m_m, o_dv < DV, True, BLOCK_DV != DV
    )
    b_delta = tl.sum(b_o.to(tl.float32) * b_do.to(tl.float32), 1)
    if HAS_DLSE:
        b_delta -= tl.load(DLSE + i_h.to(tl.int64) * stride_dlse_h + bos_q + o_m, mask=m_m, other=0.0)
    b_lse = tl.load(LSE + i_h.to(tl.int64) * stride_lse_h + bos_q + o_m, mask=m_m, other=float("inf"))
    b_lse = tl.where(b_lse == float("-inf"), float("inf"), b_lse * 1.4426950408889634)
    # every row of the block is written: the padding rows past lq get lse2 = +inf and delta = 0
    p_row = i_h.to(tl.int64) * stride_pad_h + (bos_q // ROW_PAD + i_b) * ROW_PAD + o_m
    tl.store(DELTA + p_row, b_delta)
    tl.store(LSE2 + p_row, b_lse)


# ---------------------------------------------------------------------------------------------
# 2. dK, dV (and optionally dQ by atomics)


# (BLOCK_M, BLOCK_N, warps, stages) of the dK/dV kernel, in list order (module level: CI tests the prune on it).
# dK and dV hold BLOCK_N x (D + Dv) fp32 in registers (128 per thread at D = Dv = 128 with 64 key rows per
# warpgroup), which caps the query block. Measured on an H200 (Triton 3.6, D=128, bf16): 64x64 with 4
# warps won the causal rows although it spills a little, 64x128 with 8 warps the non-causal one. 8 warps
# on 64 key rows (the warpgroups split dK/dV's columns, or with dK^T/dV^T accumulators the head dim) were
# ~2x slower: dP is computed in both warpgroups and p/ds cross between them through shared memory.
DKDV_GPU_TILES = (
    (64, 64, 4, 2),
    (64, 128, 8, 2),
    # first when LONG_KEYS (pointer q/dO loads only since session 21: with TMA the 64x64 tile wins): 3-4%
    # faster than 64x64 at mean 8192 (H200, session 3), slower on shorter and skewed batches
    (64, 128, 8, 3),
    (32, 64, 4, 3),
    (32, 128, 8, 3),
    (32, 64, 4, 4),
    # the only tile whose accumulators fit for head dims above 128 (D + Dv = 512: 128 registers per thread
    # with the columns split across two warpgroups)
    (64, 64, 8, 2),
    # the last resort (the prune keeps the last config if none fits): fp32 at D = 256, which the fp32
    # route of tiny fp16/bf16 batches runs (_core/precision.py)
    (32, 32, 4, 1),
)


def _dkdv_configs() -> list[triton.Config]:
    gpu = [
        triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "DQ_T": True}, num_warps=w, num_stages=s)
        for bm, bn, w, s in DKDV_GPU_TILES
    ]
    return configs(
        gpu, triton.Config({"BLOCK_M": 16, "BLOCK_N": 32, "DQ_T": True}, num_warps=4, num_stages=1)
    )


def _dkdv_dq_configs() -> list[triton.Config]:
    # The 5-unit path (dQ by fp32 atomics from the dK/dV kernel). Every query row's dQ is added
    # into once per key block that it sees, so 128 key rows per program (one per warpgroup) halve
    # the atomic traffic of 64; dQ^T = K^T dS^T ([D, BLOCK_M], DQ_T) keeps the head dim on the
    # wgmma M side, 16 fp32 registers per thread at 32 query rows and 8 warps on top of dK/dV's 128.
    gpu = [
        triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "DQ_T": t}, num_warps=w, num_stages=s)
        for bm, bn, w, s, t in (
            (32, 128, 8, 3, True),
            (64, 128, 8, 2, True),
            (64, 128, 8, 2, False),
            (32, 128, 8, 2, True),
            (64, 64, 4, 2, True),
            (32, 64, 4, 3, True),
            (64, 64, 8, 2, True),  # fits for head dims above 128 (spills there)
            (32, 32, 4, 1, True),  # the last resort: fp32 at D = 256 (see DKDV_GPU_TILES)
        )
    ]
    return configs(
        gpu, triton.Config({"BLOCK_M": 16, "BLOCK_N": 32, "DQ_T": True}, num_warps=4, num_stages=1)
    )


def _prune_dkdv(configs, named_args, **kwargs):
    bd, bdv = named_args["BLOCK_D"], named_args["BLOCK_DV"]
    size = _itemsize(named_args)

    def fits(c):
        bm, bn = c.kwargs["BLOCK_M"], c.kwargs["BLOCK_N"]
        smem = size * (c.num_stages * bm * (bd + bdv) + bn * (bd + bdv))  # q/do ring + k, v
        if named_args["ATOMIC_DQ"]:
            smem += size * (bn * bd + bm * bn)  # k as the operand of the dQ product, and ds itself
        return smem <= SMEM_LIMIT and bn * (bd + bdv) // (32 * c.num_warps) <= 160

    if named_args.get("LONG_KEYS") and not named_args["ATOMIC_DQ"]:
        long_tile = [c for c in configs if _tile(c) == LONG_KEYS_TILE]
        configs = long_tile + [c for c in configs if _tile(c) != LONG_KEYS_TILE]
    return fitting_configs(configs, fits)


def _tile(c) -> tuple[int, int, int, int]:
    return c.kwargs["BLOCK_M"], c.kwargs["BLOCK_N"], c.num_warps, c.num_stages


LONG_KEYS_TILE = (64, 128, 8, 3)
# the dK/dV schedule by shape (``dkdv_schedule``), from one H200 sweep (Triton 3.6, bf16, D=128,
# benchmarks/results/2026-11-21-s3-h200-attention-dkdv-sweep.jsonl)
LONG_KEYS_MIN = 4096


@triton.jit
def _attention_bwd_dkdv_inner(
    dk,
    dv,
    b_k,
    b_v,
    Q,
    DO,
    LSE2,
    DELTA,
    DQ_ACC,
    m_lo,
    m_a,
    m_b,
    m_hi,
    o_n,
    bos_q,
    pad_q,
    lq,
    lk,
    diag,
    i_hk,
    hq0,
    GROUP,
    window_left,
    window_right,
    scale,
    qk_scale,
    softcap_in,
    softcap_out,
    stride_qt,
    stride_qh,
    stride_dot,
    stride_doh,
    stride_pad_h,
    stride_dqt,
    stride_dqh,
    D: tl.constexpr,
    DV: tl.constexpr,
    BLOCK_D: tl.constexpr,
    BLOCK_DV: tl.constexpr,
    BLOCK_M: tl.constexpr,
    HAS_LEFT: tl.constexpr,
    HAS_RIGHT: tl.constexpr,
    HAS_SOFTCAP: tl.constexpr,
    ATOMIC_DQ: tl.constexpr,
    DQ_T: tl.constexpr,
    DOT_PREC: tl.constexpr,
    TMA: tl.constexpr,
):
    """Query blocks ``[m_lo, m_hi)`` of every query head of the GQA group; blocks outside
    ``[m_a, m_b)`` get the element mask. ``TMA``: ``Q`` / ``DO`` are descriptors over the packed
    ``[rows, heads * D]`` views bounded at the sequence's end (rows past it read zeros, which the padding
    rows' ``lse2 = +inf`` turns into ``p = ds = 0`` like the clamped rows of the pointer loads).

    One flat loop over (head of the group, query block): a single software pipeline whose
    prologue and drain are paid once per program, not once per head (short sequences have only
    a few query blocks per head). Query rows are clamped to the sequence (``min(i, lq - 1)``)
    so the q/do loads need no mask. lse2 and delta come from the row-padded layout the dQ (or
    preprocess) kernel wrote (``row_stats_rows``): row ``i`` of the sequence at ``pad_q + i``, where
    ``pad_q`` is a multiple of ``ROW_PAD``, with ``lse2 = +inf`` and ``delta = 0`` on the padding rows,
    hence ``p = 0`` and ``ds = 0`` there. Those loads are unmasked, unclamped and aligned, so they
    vectorize: with clamped rows Triton 3.6 issued one 4-byte ``cp.async`` per element of the
    replicated slice layout (32 per thread per step, plus their address arithmetic; session 17).
    The 2-D pointers are rebuilt from scalars each step rather than kept live across the loop
    (that cost ~30 registers in a kernel whose dK/dV accumulators already take 128 per thread).
    """
    o_m0 = tl.arange(0, BLOCK_M)
    o_d = tl.arange(0, BLOCK_D)
    o_dv = tl.arange(0, BLOCK_DV)
    n_blocks = (m_hi - m_lo) // BLOCK_M  # _block_ranges returns block-aligned bounds
    for it in range(0, GROUP * n_blocks):
        i_g = it // n_blocks
        i_h = i_hk * GROUP + i_g
        m0 = tl.multiple_of(m_lo + (it - i_g * n_blocks) * BLOCK_M, BLOCK_M)
        o_m = m0 + o_m0
        m_m = o_m < lq
        if TMA:  # session 20 (H100): the backward 8-13% faster than the pointer loads (see dkdv_use_tma)
            b_qT = tl.trans(Q.load([bos_q + m0, i_h * stride_qh]))
            b_do = DO.load([bos_q + m0, i_h * stride_doh])
        else:
            rows = (bos_q + tl.minimum(o_m, lq - 1)).to(tl.int64)
            # q^T loaded as a [D, BLOCK_M] tile (no tl.trans of a [BLOCK_M, D] one): with delta loaded after
            # the dV product, 1-6% faster dK/dV on the H100 at mean 8192, bitwise the same (session 16)
            b_qT = _load_tile(
                Q + rows[None, :] * stride_qt + i_h * stride_qh + o_d[:, None],
                o_d < D,
                m_m,
                BLOCK_D != D,
                False,
            )
            b_do = _load_tile(
                DO + rows[:, None] * stride_dot + i_h * stride_doh + o_dv[None, :],
                m_m,
                o_dv < DV,
                False,
                BLOCK_DV != DV,
            )
        rows_pad = i_h.to(tl.int64) * stride_pad_h + pad_q + o_m
        b_lse = tl.load(LSE2 + rows_pad)
        sT = tl.dot(b_k, b_qT, input_precision=DOT_PREC)
        if HAS_SOFTCAP:
            tT = _tanh(sT * softcap_in)
            sT = softcap_out * tT
        else:
            sT = sT * qk_scale
        pT = tl.math.exp2(sT - b_lse[None, :])
        if (m0 < m_a) | (m0 >= m_b):
            vis = m_m[None, :] & (o_n < lk)[:, None]
            if HAS_LEFT:
                vis = vis & (o_n[:, None] >= o_m[None, :] + (diag - window_left))
            if HAS_RIGHT:
                vis = vis & (o_n[:, None] <= o_m[None, :] + (diag + window_right))
            pT = tl.where(vis, pT, 0.0)
        dv = tl.dot(pT.to(b_do.dtype), b_do, dv, input_precision=DOT_PREC)
        b_delta = tl.load(DELTA + rows_pad)
        dpT = tl.dot(b_v, tl.trans(b_do), input_precision=DOT_PREC)
        dsT = pT * (dpT - b_delta[None, :])
        if HAS_SOFTCAP:
            dsT = dsT * (1.0 - tT * tT)
        dsT = dsT.to(b_qT.dtype)
        dk = tl.dot(dsT, tl.trans(b_qT), dk, input_precision=DOT_PREC)
        if ATOMIC_DQ:
            # DQ_ACC holds the query heads [hq0, hq0 + its width) (the launcher chunks the heads)
            rows_dq = (bos_q + o_m).to(tl.int64) * stride_dqt + (i_h - hq0) * stride_dqh
            if DQ_T:
                # dQ^T = K^T dS^T: the head dim is the wgmma M side and dS^T its B operand as is
                b_dqT = tl.dot(tl.trans(b_k), dsT, input_precision=DOT_PREC) * scale
                p_dq = DQ_ACC + rows_dq[None, :] + o_d[:, None]
                tl.atomic_add(p_dq, b_dqT, mask=m_m[None, :] & (o_d < D)[:, None], sem="relaxed")
            else:
                b_dq = tl.dot(tl.trans(dsT), b_k, input_precision=DOT_PREC) * scale
                p_dq = DQ_ACC + rows_dq[:, None] + o_d[None, :]
                tl.atomic_add(p_dq, b_dq, mask=m_m[:, None] & (o_d < D)[None, :], sem="relaxed")
    return dk, dv


@triton.jit(do_not_specialize=["B", "HK0", "GROUP", "window_left", "window_right", "SEQ_BUCKET", "LONG_KEYS"])
def _attention_bwd_dkdv_kernel(
    Q,
    K,
    V,
    DO,
    LSE2,
    DELTA,
    DK,
    DV_OUT,
    DQ_ACC,
    CU_Q,
    CU_K,
    stride_qt,
    stride_qh,
    stride_kt,
    stride_kh,
    stride_vt,
    stride_vh,
    stride_dot,
    stride_doh,
    stride_pad_h,
    stride_dkt,
    stride_dkh,
    stride_dvt,
    stride_dvh,
    stride_dqt,
    stride_dqh,
    B,
    HK0,
    GROUP,
    window_left,
    window_right,
    scale,
    qk_scale,
    softcap_in,
    softcap_out,
    SEQ_BUCKET,
    LONG_KEYS,
    D: tl.constexpr,
    DV: tl.constexpr,
    BLOCK_D: tl.constexpr,
    BLOCK_DV: tl.constexpr,
    HAS_LEFT: tl.constexpr,
    HAS_RIGHT: tl.constexpr,
    HAS_SOFTCAP: tl.constexpr,
    ATOMIC_DQ: tl.constexpr,
    HEAD_MAJOR: tl.constexpr,
    DOT_PREC: tl.constexpr,
    ROW_PAD: tl.constexpr,
    TMA: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    DQ_T: tl.constexpr,
):
    # Inductor passes Python floats as fp64 scalars; fp64 would promote the tiles
    scale = tl.cast(scale, tl.float32)
    qk_scale = tl.cast(qk_scale, tl.float32)
    softcap_in = tl.cast(softcap_in, tl.float32)
    softcap_out = tl.cast(softcap_out, tl.float32)
    # natural order: the first key blocks (heaviest when causal) start first; HEAD_MAJOR puts the
    # heads on grid axis 0 so those of every head start before any lighter block
    if HEAD_MAJOR:
        i_slot = tl.program_id(1)
        i_hk = tl.program_id(0) + HK0  # the launcher may cover the kv heads in chunks (atomic dQ)
    else:
        i_slot = tl.program_id(0)
        i_hk = tl.program_id(1) + HK0
    # the sequence owning this slot: binary search over CU_K (inlined, see common.py for why)
    i_b = i_slot * 0
    hi_b = i_b + B
    while hi_b - i_b > 1:
        mid = (i_b + hi_b) // 2
        go_right = tl.load(CU_K + mid).to(tl.int32) // BLOCK_N + mid <= i_slot
        i_b = tl.where(go_right, mid, i_b)
        hi_b = tl.where(go_right, hi_b, mid)
    bos_k = tl.load(CU_K + i_b).to(tl.int32)
    i_n = i_slot - (bos_k // BLOCK_N + i_b)
    lk = tl.load(CU_K + i_b + 1).to(tl.int32) - bos_k
    n0 = i_n * BLOCK_N
    if n0 >= lk:
        return
    bos_q = tl.load(CU_Q + i_b).to(tl.int32)
    lq = tl.load(CU_Q + i_b + 1).to(tl.int32) - bos_q
    diag = lk - lq
    pad_q = (bos_q // ROW_PAD + i_b) * ROW_PAD  # this sequence's first row in the padded lse2/delta

    o_n = n0 + tl.arange(0, BLOCK_N)
    o_d = tl.arange(0, BLOCK_D)
    o_dv = tl.arange(0, BLOCK_DV)
    m_n = o_n < lk
    rows_k = (bos_k + o_n).to(tl.int64)[:, None]
    b_k = _load_tile(
        K + rows_k * stride_kt + i_hk * stride_kh + o_d[None, :], m_n, o_d < D, True, BLOCK_D != D
    )
    b_v = _load_tile(
        V + rows_k * stride_vt + i_hk * stride_vh + o_dv[None, :], m_n, o_dv < DV, True, BLOCK_DV != DV
    )

    # query rows that see some key of the block: [lo, hi); rows that see all of them: [full_lo, full_hi)
    n_last = tl.minimum(n0 + BLOCK_N, lk) - 1
    lo = n0 * 0
    full_lo = lo
    hi = lq
    full_hi = lq
    if HAS_RIGHT:
        lo = tl.maximum(n0 - diag - window_right, 0)
        full_lo = tl.maximum(n_last - diag - window_right, 0)
    if HAS_LEFT:
        hi = tl.minimum(n_last - diag + window_left + 1, lq)
        full_hi = tl.minimum(n0 - diag + window_left + 1, lq)
    if n0 + BLOCK_N > lk:  # the padded key rows of a partial block must be masked everywhere
        full_hi = full_lo
    m_start, m_a, m_b, m_stop = _block_ranges(lo, hi, full_lo, full_hi, BLOCK_M)

    if TMA:  # q / dO rows of every head of the group: descriptors over [rows, heads * D] (see dkdv_use_tma)
        p_q = tl.make_tensor_descriptor(
            Q,
            shape=[tl.maximum(bos_q + lq, 1), stride_qt],
            strides=[stride_qt, 1],
            block_shape=[BLOCK_M, BLOCK_D],
        )
        p_do = tl.make_tensor_descriptor(
            DO, shape=[tl.maximum(bos_q + lq, 1), stride_dot], strides=[stride_dot, 1],
            block_shape=[BLOCK_M, BLOCK_DV],
        )  # fmt: skip
    else:
        p_q = Q
        p_do = DO
    dk = tl.zeros([BLOCK_N, BLOCK_D], dtype=tl.float32)
    dv = tl.zeros([BLOCK_N, BLOCK_DV], dtype=tl.float32)
    dk, dv = _attention_bwd_dkdv_inner(
        dk, dv, b_k, b_v, p_q, p_do, LSE2, DELTA, DQ_ACC, m_start, m_a, m_b, m_stop, o_n, bos_q, pad_q, lq, lk,
        diag, i_hk, HK0 * GROUP, GROUP, window_left, window_right, scale, qk_scale, softcap_in, softcap_out,
        stride_qt, stride_qh, stride_dot, stride_doh, stride_pad_h, stride_dqt, stride_dqh,
        D, DV, BLOCK_D, BLOCK_DV, BLOCK_M, HAS_LEFT, HAS_RIGHT, HAS_SOFTCAP, ATOMIC_DQ, DQ_T, DOT_PREC, TMA,
    )  # fmt: skip

    m_store = m_n[:, None]
    p_dk = DK + rows_k * stride_dkt + i_hk * stride_dkh + o_d[None, :]
    tl.store(p_dk, (dk * scale).to(DK.dtype.element_ty), mask=m_store & (o_d < D)[None, :])
    p_dv = DV_OUT + rows_k * stride_dvt + i_hk * stride_dvh + o_dv[None, :]
    tl.store(p_dv, dv.to(DV_OUT.dtype.element_ty), mask=m_store & (o_dv < DV)[None, :])


_DKDV_KEY = [
    "D",
    "DV",
    "HAS_LEFT",
    "HAS_RIGHT",
    "HAS_SOFTCAP",
    "ATOMIC_DQ",
    "HEAD_MAJOR",
    "SEQ_BUCKET",
    "LONG_KEYS",
    "TMA",
]
# one kernel, two tuned launchers: the config lists of the two dQ paths differ
_attention_bwd_dkdv_jit = _attention_bwd_dkdv_kernel
_attention_bwd_dkdv_kernel = triton.autotune(
    configs=_dkdv_configs(), key=_DKDV_KEY, prune_configs_by={"early_config_prune": _prune_dkdv}
)(_attention_bwd_dkdv_jit)
_attention_bwd_dkdv_dq_kernel = triton.autotune(
    configs=_dkdv_dq_configs(),
    key=_DKDV_KEY,
    prune_configs_by={"early_config_prune": _prune_dkdv},
    reset_to_zero=["DQ_ACC"],
)(_attention_bwd_dkdv_jit)


# ---------------------------------------------------------------------------------------------
# 3. dQ (deterministic; also writes delta)


# (BLOCK_M, BLOCK_N, warps, stages, maxnreg) of the dQ kernel, in list order
DQ_GPU_TILES = (
    (128, 64, 8, 3, None),
    (128, 64, 8, 4, None),
    # capped at 128 registers: two programs per SM, so one's exp2 and elementwise work overlaps the
    # other's matmuls (won the mean-512/2048 and window rows on an H200)
    (128, 32, 8, 3, 128),
    (64, 64, 4, 2, None),
    (64, 64, 4, 3, None),
    (32, 32, 4, 1, None),  # the last resort: fp32 at D = 256 (see DKDV_GPU_TILES)
)


def _dq_configs() -> list[triton.Config]:
    gpu = [
        triton.Config({"BLOCK_M": bm, "BLOCK_N": bn}, num_warps=w, num_stages=s, maxnreg=r)
        for bm, bn, w, s, r in DQ_GPU_TILES
    ]
    return configs(gpu, triton.Config({"BLOCK_M": 32, "BLOCK_N": 16}, num_warps=4, num_stages=1))


def _prune_dq(configs, named_args, **kwargs):
    bd, bdv = named_args["BLOCK_D"], named_args["BLOCK_DV"]

    size = _itemsize(named_args)

    def fits(c):
        bm, bn = c.kwargs["BLOCK_M"], c.kwargs["BLOCK_N"]
        smem = size * (c.num_stages * bn * (bd + bdv) + bm * (bd + bdv))  # k/v ring + q, do
        acc_regs = bm * bd // (32 * c.num_warps)  # the fp32 dQ accumulator per thread
        # a register cap must leave room for the score tiles (ptxas refuses to compile otherwise)
        cap = getattr(c, "maxnreg", None) or 2 * 128
        return smem <= SMEM_LIMIT and acc_regs <= 128 and acc_regs <= cap // 2

    return fitting_configs(configs, fits)


@triton.jit
def _attention_bwd_dq_inner(
    dq,
    b_q,
    b_do,
    b_lse,
    b_delta,
    p_k0,
    p_v0,
    n_lo,
    n_a,
    n_b,
    n_hi,
    o_m,
    lk,
    diag,
    window_left,
    window_right,
    qk_scale,
    softcap_in,
    softcap_out,
    stride_kt,
    stride_vt,
    D: tl.constexpr,
    DV: tl.constexpr,
    BLOCK_D: tl.constexpr,
    BLOCK_DV: tl.constexpr,
    BLOCK_N: tl.constexpr,
    HAS_LEFT: tl.constexpr,
    HAS_RIGHT: tl.constexpr,
    HAS_SOFTCAP: tl.constexpr,
    DOT_PREC: tl.constexpr,
    TMA: tl.constexpr,
):
    """Key blocks ``[n_lo, n_hi)``; those outside ``[n_a, n_b)`` get the element mask. Key rows at or past
    ``lk`` read as zeros (``TMA``: ``p_k0`` / ``p_v0`` are the sequence's descriptors, whose row bound
    zero-fills them)."""
    o_n0 = tl.arange(0, BLOCK_N)
    o_d = tl.arange(0, BLOCK_D)
    o_dv = tl.arange(0, BLOCK_DV)
    for n0 in range(n_lo, n_hi, BLOCK_N):
        n0 = tl.multiple_of(n0, BLOCK_N)
        o_n = n0 + o_n0
        m_n = o_n < lk
        if TMA:
            b_k = p_k0.load([n0, 0])
            b_v = p_v0.load([n0, 0])
        else:
            b_k = _load_tile(p_k0 + n0.to(tl.int64) * stride_kt, m_n, o_d < D, True, BLOCK_D != D)
            b_v = _load_tile(p_v0 + n0.to(tl.int64) * stride_vt, m_n, o_dv < DV, True, BLOCK_DV != DV)
        # [BLOCK_M, BLOCK_N]
        s = tl.dot(b_q, tl.trans(b_k), input_precision=DOT_PREC)
        if HAS_SOFTCAP:
            t = _tanh(s * softcap_in)
            s = softcap_out * t
        else:
            s = s * qk_scale
        p = tl.math.exp2(s - b_lse[:, None])
        if (n0 < n_a) | (n0 >= n_b):
            vis = m_n[None, :]
            if HAS_LEFT:
                vis = vis & (o_n[None, :] >= o_m[:, None] + (diag - window_left))
            if HAS_RIGHT:
                vis = vis & (o_n[None, :] <= o_m[:, None] + (diag + window_right))
            p = tl.where(vis, p, 0.0)
        dp = tl.dot(b_do, tl.trans(b_v), input_precision=DOT_PREC)
        ds = p * (dp - b_delta[:, None])
        if HAS_SOFTCAP:
            ds = ds * (1.0 - t * t)
        dq = tl.dot(ds.to(b_k.dtype), b_k, dq, input_precision=DOT_PREC)
    return dq


@triton.autotune(
    configs=_dq_configs(),
    key=["D", "DV", "HAS_LEFT", "HAS_RIGHT", "HAS_SOFTCAP", "HAS_DLSE", "SEQ_BUCKET", "TMA"],
    prune_configs_by={"early_config_prune": _prune_dq},
)
@triton.jit(do_not_specialize=["B", "GROUP", "window_left", "window_right", "SEQ_BUCKET"])
def _attention_bwd_dq_kernel(
    Q,
    K,
    V,
    O,
    DO,
    LSE,
    DLSE,
    DELTA,
    LSE2,
    DQ,
    CU_Q,
    CU_K,
    stride_qt,
    stride_qh,
    stride_kt,
    stride_kh,
    stride_vt,
    stride_vh,
    stride_ot,
    stride_oh,
    stride_dot,
    stride_doh,
    stride_lse_h,
    stride_dlse_h,
    stride_pad_h,
    stride_dqt,
    stride_dqh,
    B,
    GROUP,
    window_left,
    window_right,
    scale,
    qk_scale,
    softcap_in,
    softcap_out,
    SEQ_BUCKET,
    D: tl.constexpr,
    DV: tl.constexpr,
    BLOCK_D: tl.constexpr,
    BLOCK_DV: tl.constexpr,
    HAS_LEFT: tl.constexpr,
    HAS_RIGHT: tl.constexpr,
    HAS_SOFTCAP: tl.constexpr,
    HAS_DLSE: tl.constexpr,
    DOT_PREC: tl.constexpr,
    ROW_PAD: tl.constexpr,
    TMA: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    # Inductor passes Python floats as fp64 scalars; fp64 would promote the tiles
    scale = tl.cast(scale, tl.float32)
    qk_scale = tl.cast(qk_scale, tl.float32)
    softcap_in = tl.cast(softcap_in, tl.float32)
    softcap_out = tl.cast(softcap_out, tl.float32)
    i_slot = tl.num_programs(0) - 1 - tl.program_id(0)
    i_h = tl.program_id(1)
    # the sequence owning this slot: binary search over CU_Q (inlined, see common.py for why)
    i_b = i_slot * 0
    hi_b = i_b + B
    while hi_b - i_b > 1:
        mid = (i_b + hi_b) // 2
        go_right = tl.load(CU_Q + mid).to(tl.int32) // BLOCK_M + mid <= i_slot
        i_b = tl.where(go_right, mid, i_b)
        hi_b = tl.where(go_right, hi_b, mid)
    bos_q = tl.load(CU_Q + i_b).to(tl.int32)
    i_m = i_slot - (bos_q // BLOCK_M + i_b)
    lq = tl.load(CU_Q + i_b + 1).to(tl.int32) - bos_q
    m0 = i_m * BLOCK_M
    if m0 >= lq:
        return
    bos_k = tl.load(CU_K + i_b).to(tl.int32)
    lk = tl.load(CU_K + i_b + 1).to(tl.int32) - bos_k
    i_hk = i_h // GROUP
    diag = lk - lq

    o_m = m0 + tl.arange(0, BLOCK_M)
    o_d = tl.arange(0, BLOCK_D)
    o_dv = tl.arange(0, BLOCK_DV)
    m_m = o_m < lq
    rows_q = (bos_q + o_m).to(tl.int64)[:, None]
    b_q = _load_tile(
        Q + rows_q * stride_qt + i_h * stride_qh + o_d[None, :], m_m, o_d < D, True, BLOCK_D != D
    )
    b_do = _load_tile(
        DO + rows_q * stride_dot + i_h * stride_doh + o_dv[None, :], m_m, o_dv < DV, True, BLOCK_DV != DV
    )
    b_lse = tl.load(LSE + i_h.to(tl.int64) * stride_lse_h + bos_q + o_m, mask=m_m, other=float("inf"))
    b_lse = tl.where(b_lse == float("-inf"), float("inf"), b_lse * 1.4426950408889634)
    # delta = rowsum(o * do) - dlse for this tile, computed here (no separate pass over o and do)
    # and stored for the dK/dV kernel, which runs after this one
    b_o = _load_tile(
        O + rows_q * stride_ot + i_h * stride_oh + o_dv[None, :], m_m, o_dv < DV, True, BLOCK_DV != DV
    )
    b_delta = tl.sum(b_o.to(tl.float32) * b_do.to(tl.float32), 1)
    if HAS_DLSE:
        b_delta -= tl.load(DLSE + i_h.to(tl.int64) * stride_dlse_h + bos_q + o_m, mask=m_m, other=0.0)
    # delta and the base-2 lse (+inf where no key is visible) in the row-padded layout of the dK/dV kernel
    pad_row0 = i_h.to(tl.int64) * stride_pad_h + (bos_q // ROW_PAD + i_b) * ROW_PAD
    tl.store(DELTA + pad_row0 + o_m, b_delta, mask=m_m)
    tl.store(LSE2 + pad_row0 + o_m, b_lse, mask=m_m)
    if m0 + BLOCK_M >= lq:
        # the last block also fills the padding rows [lq, ROW_PAD-aligned end): lse2 = +inf, delta = 0
        o_p = (lq // ROW_PAD) * ROW_PAD + tl.arange(0, ROW_PAD)
        tl.store(DELTA + pad_row0 + o_p, tl.zeros([ROW_PAD], dtype=tl.float32), mask=o_p >= lq)
        tl.store(LSE2 + pad_row0 + o_p, tl.full([ROW_PAD], float("inf"), tl.float32), mask=o_p >= lq)
    # K/V of the sequence and kv head (TMA descriptors: session 19 forward, session 20 dQ)
    p_k0, p_v0 = _kv_bases(
        K, V, bos_k, lk, i_hk, stride_kt, stride_kh, stride_vt, stride_vh, D, DV, BLOCK_N, BLOCK_D, BLOCK_DV, TMA
    )  # fmt: skip

    m_last = tl.minimum(m0 + BLOCK_M, lq) - 1
    lo = m0 * 0
    full_lo = lo
    hi = lk
    full_hi = lk
    if HAS_LEFT:
        lo = tl.maximum(m0 + diag - window_left, 0)
        full_lo = tl.maximum(m_last + diag - window_left, 0)
    if HAS_RIGHT:
        hi = tl.minimum(m_last + diag + window_right + 1, lk)
        full_hi = tl.minimum(m0 + diag + window_right + 1, lk)
    n_start, n_a, n_b, n_stop = _block_ranges(lo, hi, full_lo, full_hi, BLOCK_N)

    dq = tl.zeros([BLOCK_M, BLOCK_D], dtype=tl.float32)
    dq = _attention_bwd_dq_inner(
        dq, b_q, b_do, b_lse, b_delta, p_k0, p_v0, n_start, n_a, n_b, n_stop, o_m, lk, diag, window_left,
        window_right, qk_scale, softcap_in, softcap_out, stride_kt, stride_vt,
        D, DV, BLOCK_D, BLOCK_DV, BLOCK_N, HAS_LEFT, HAS_RIGHT, HAS_SOFTCAP, DOT_PREC, TMA,
    )  # fmt: skip
    p_dq = DQ + rows_q * stride_dqt + i_h * stride_dqh + o_d[None, :]
    tl.store(p_dq, (dq * scale).to(DQ.dtype.element_ty), mask=m_m[:, None] & (o_d < D)[None, :])


# ---------------------------------------------------------------------------------------------
# launcher

# Row padding of the delta / lse2 buffers the dK/dV kernel reads (row_stats_rows); must be >= every
# dK/dV BLOCK_M (64 on the GPU, 16 in the interpreter) so a query block never reads past its sequence's
# padding, and a multiple of them so its rows start aligned.
ROW_PAD = 64


def row_stats_rows(tq, batch):
    """Rows per head of delta / lse2: sequence ``b`` starts at row ``(cu_q[b] // ROW_PAD + b) * ROW_PAD``
    (the varlen slot of ``common`` at block ``ROW_PAD``), so every sequence starts ``ROW_PAD``-aligned and
    owns its rows up to the next multiple of ``ROW_PAD`` past its end (the padding: ``lse2 = +inf``,
    ``delta = 0``)."""
    return num_slots(tq, batch, ROW_PAD) * ROW_PAD


# The atomic path's fp32 dQ buffer covers at most this fraction of the bf16/fp16 dQ's bytes (the
# launcher walks the kv heads in chunks): 0.5 keeps the extra peak memory at a quarter of an fp32
# [Tq, Hq, D] buffer (64 MiB at 32k tokens, 16 heads, D = 128).
DQ_ACC_FRACTION = 0.5


def dq_mode(deterministic: bool) -> str:
    """``"kernel"`` (separate dQ kernel, bit-reproducible) or ``"atomic"`` (fp32 atomics in dK/dV).

    ``deterministic=True`` always gets ``"kernel"``. Otherwise ``JAGATTN_ATTN_DQ`` (``kernel`` or
    ``atomic``) chooses, default ``kernel``: it was faster on every suite row at the memory the
    atomic path is allowed (see the module docstring), so no shape selects ``atomic`` by itself.
    """
    if deterministic:
        return "kernel"
    return env_choice("JAGATTN_ATTN_DQ", ("kernel", "atomic"), "kernel")


def dq_chunk_kv_heads(hq: int, hkv: int, q_itemsize: int) -> int:
    """kv heads per launch of the atomic path: the fp32 buffer of their ``group`` query heads stays
    within ``DQ_ACC_FRACTION`` of dQ's own bytes (at least one kv head). ``JAGATTN_ATTN_DQ_HEADS``
    (query heads per chunk, for measurements) overrides it."""
    group = hq // hkv
    q_heads = env_positive_int("JAGATTN_ATTN_DQ_HEADS", None)
    if q_heads is None:
        q_heads = int(hq * DQ_ACC_FRACTION * q_itemsize / 4)
    return max(1, min(hkv, q_heads // group))


DQ_TMA = env_choice("JAGATTN_ATTN_DQ_TMA", ("auto", "0"), "auto")  # read at import, like the forward's


def dq_use_tma(k: torch.Tensor, v: torch.Tensor) -> bool:
    """K/V loads of the dQ kernel through TMA descriptors under the forward's conditions
    (``_core.tma.tma_loads_ok``; called in ``attention_bwd``, i.e. in the thread that launches: autograd's
    backward thread starts without Triton's scratch allocator). H100, the backward against pointer loads:
    1.010-1.061x on four suite rows (session 19 round 11), 0.969-1.059x on five (session 20 round 1; the
    0.969 on mean 8192 Hkv 16, 1.010 in round 11), gradients bitwise the same.
    ``JAGATTN_ATTN_DQ_TMA=0`` disables it."""
    return DQ_TMA != "0" and tma_loads_ok(k, v)


DKDV_TMA = env_choice("JAGATTN_ATTN_DKDV_TMA", ("auto", "0"), "auto")  # read at import


def dkdv_use_tma(q: torch.Tensor, do: torch.Tensor, d: int, dv: int, bd: int, bdv: int) -> bool:
    """q / dO loads of the dK/dV loop through TMA descriptors, bitwise the same gradients. Session 20, H100,
    same process, backward x vs the pointer loads (round 3 / round 4, medians of passes 2-4): skewed 1.11 /
    1.12, non-causal 2048 1.11 / 1.09, mean 2048 Hkv 4 1.08 / 1.13; suite (round 4 vs 3) mean 2048 Hkv 16
    2.459 -> 2.286 ms. On the long-keys 64x128 8-warp tile it gained nothing (mean 8192 Hkv 4 0.96 / 1.00,
    Hkv 16 1.01 / 0.99), but the 64x64 4-warp tile with it beats that tile at mean 8192 (session 21, round 1:
    backward x1.145 Hkv 4, x1.08 Hkv 16), so where these loads are taken ``dkdv_schedule`` drops the long tile.
    One descriptor per tensor over its packed ``[rows, heads * D]`` view (every head of the GQA group walks
    it), so: ``_core.tma.tma_loads_ok``'s conditions for q and dO, head dims
    equal to their power-of-two blocks (a wider block would read the next head's columns), and every head's
    columns inside one row (``stride(1) * (H - 1) + D <= stride(0)``; an expanded dO with stride 0 fails it).
    ``JAGATTN_ATTN_DKDV_TMA=0`` disables it."""
    if DKDV_TMA == "0" or bd != d or bdv != dv:
        return False
    for t, width in ((q, d), (do, dv)):
        if t.stride(1) * (t.shape[1] - 1) + width > t.stride(0):
            return False
    return tma_loads_ok(q, do)


def dkdv_schedule(tk, batch, group, window_left: int, tma: bool = False) -> tuple[int, bool]:
    """``(LONG_KEYS, head_major)`` of the dK/dV launch, from shapes only (no sync).

    LONG_KEYS (mean key length, capped by a left window, >= ``LONG_KEYS_MIN``, and q / dO through pointer
    loads: ``tma`` False) puts the 128-key 8-warp tile first. With the TMA q / dO loads (``dkdv_use_tma``)
    the 64x64 4-warp tile and the head-major grid won at mean 8192 too (session 21, H100, same process,
    backward x1.145 Hkv 4 / x1.08 Hkv 16 over the long tile; the slot-major grid x1.09 / x1.10).
    ``head_major`` (GQA without LONG_KEYS) launches the grid as (kv heads, slots) so the heavy first key
    blocks of every head start before any light one. Measured on an H200
    (bwd ms, first-listed tiles): mean 8192 Hkv 16 / 4: 7.84 / 8.10 -> 7.58 / 7.82 (long tile);
    mean 2048 Hkv 4: 2.74 -> 2.48, mean 512 Hkv 4: 1.07 -> 1.06 (head-major). Not taken: the long
    tile at mean 512/2048 and skewed (3-9% slower; the window row lost 12% with its s2 twin in
    session 2), head-major without GQA (skewed 4.5% slower). ``JAGATTN_ATTN_HEAD_MAJOR=0|1``
    overrides the grid order (for measurements); grid axis 1 holds at most 65535 programs.
    """
    concrete = isinstance(tk, int) and isinstance(batch, int) and isinstance(group, int)
    keys = tk // max(batch, 1) if concrete else 0
    if window_left >= 0:
        keys = min(keys, window_left + 1)
    long_keys = int(keys >= LONG_KEYS_MIN and not tma)
    head_major = concrete and group > 1 and not long_keys
    env = env_flag("JAGATTN_ATTN_HEAD_MAJOR", None)
    if env is not None:
        head_major = env
    # the slot count of the smallest key block (the interpreter's 32) must fit grid axis 1
    return long_keys, head_major and isinstance(tk, int) and num_slots(tk, batch, 32) <= 65535


def attention_bwd(
    do: torch.Tensor,
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    o: torch.Tensor,
    lse: torch.Tensor,
    dlse: torch.Tensor | None,
    cu_seqlens_q: torch.Tensor,
    cu_seqlens_k: torch.Tensor,
    max_seqlen_q: int,
    max_seqlen_k: int,
    window_left: int,
    window_right: int,
    scale: float,
    softcap: float,
    deterministic: bool,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Launch the backward kernels; returns ``(dq, dk, dv)`` shaped and typed like q, k, v.

    Args:
        do: ``[Tq, Hq, Dv]`` gradient of o (last dim contiguous).
        o, lse: the forward outputs (``lse [Hq, Tq]`` fp32, natural log).
        dlse: ``[Hq, Tq]`` gradient of lse, or None.
        deterministic: use the separate dQ kernel (no float atomics): bit-identical reruns.
    """
    tq, hq = q.shape[0], q.shape[1]
    tk, hkv = k.shape[0], k.shape[1]
    # head dims become constexprs: concrete ints even under dynamic-shape tracing
    d, dv = int(q.shape[2]), int(v.shape[2])
    batch = cu_seqlens_q.shape[0] - 1
    mode = dq_mode(deterministic)
    if tk == 0 or batch == 0 or tq == 0:
        # no (query, key) pair exists: every gradient is zero
        return torch.zeros_like(q), torch.zeros_like(k), torch.zeros_like(v)
    dk = new_empty(tuple(k.shape), dtype=k.dtype, device=k.device)
    dvv = new_empty(tuple(v.shape), dtype=v.dtype, device=v.device)
    has_left, has_right, wl, wr = window_args(window_left, window_right)
    has_softcap, qk_scale, softcap_in, softcap_out = softcap_args(scale, softcap)
    bucket = seq_bucket(max_seqlen_q, max_seqlen_k)
    bd, bdv = head_block(d), head_block(dv)
    prec = dot_precision(q.dtype)

    # delta and lse2 (base-2 lse, +inf where no key is visible) in the row-padded layout (row_stats_rows)
    delta = new_empty((hq, row_stats_rows(tq, batch)), dtype=torch.float32, device=q.device)
    lse2 = new_empty(tuple(delta.shape), dtype=torch.float32, device=q.device)
    has_dlse = dlse is not None
    dlse_arg = dlse if has_dlse else delta
    group = hq // hkv
    dq = new_empty(tuple(q.shape), dtype=q.dtype, device=q.device)

    # Hopper, eager: the hand-scheduled Gluon dK/dV kernel (bwd_gluon.py; same contract, bitwise the same results)
    # after the dQ kernel; decided first so that its calls skip the Triton launch's schedule work (host time)
    gluon = mode != "atomic" and use_gluon(q, k, v, do, softcap, False)
    # the fused dQ-atomics kernel has no TMA path; the Gluon kernel loads q / dO through TMA
    tma = gluon or (mode != "atomic" and dkdv_use_tma(q, do, d, dv, bd, bdv))
    long_keys, head_major = dkdv_schedule(tk, batch, group, window_left, tma)

    def grid_kv(heads):
        if head_major:
            return lambda meta: (heads, num_slots(tk, batch, meta["BLOCK_N"]))
        return lambda meta: (num_slots(tk, batch, meta["BLOCK_N"]), heads)

    if mode == "atomic":
        launch(_attention_bwd_preprocess_kernel, (num_slots(tq, batch, ROW_PAD), hq),
            o, do, lse, dlse_arg, delta, lse2, cu_seqlens_q, batch,
            o.stride(0), o.stride(1), do.stride(0), do.stride(1), lse.stride(0), dlse_arg.stride(0),
            delta.stride(0), dv, bdv, has_dlse, ROW_PAD,
        )  # fmt: skip
        chunk = dq_chunk_kv_heads(hq, hkv, q.element_size())
        dq_buf = torch.empty((tq, chunk * group, d), dtype=torch.float32, device=q.device)
        for hk0 in range(0, hkv, chunk):
            hk_launch = min(chunk, hkv - hk0)
            dq_acc = dq_buf[:, : hk_launch * group]
            dq_acc.zero_()
            launch(_attention_bwd_dkdv_dq_kernel, grid_kv(hk_launch),
                q, k, v, do, lse2, delta, dk, dvv, dq_acc, cu_seqlens_q, cu_seqlens_k,
                q.stride(0), q.stride(1), k.stride(0), k.stride(1), v.stride(0), v.stride(1),
                do.stride(0), do.stride(1), delta.stride(0),
                dk.stride(0), dk.stride(1), dvv.stride(0), dvv.stride(1),
                dq_acc.stride(0), dq_acc.stride(1),
                batch, hk0, group, wl, wr, scale, qk_scale, softcap_in, softcap_out, bucket, long_keys,
                d, dv, bd, bdv, has_left, has_right, has_softcap, True, head_major, prec, ROW_PAD, False,
            )  # fmt: skip
            dq[:, hk0 * group : (hk0 + hk_launch) * group].copy_(dq_acc)
        return dq, dk, dvv

    # the dQ kernel runs first and writes delta on the way (see its docstring); Hopper, eager: the Gluon dQ kernel
    # (bwd_gluon.py; same contract, bitwise the same dq / delta / lse2)
    if gluon and bwd_gluon.DQ_GLUON:
        launch_dq_gluon(
            q, k, v, o, do, lse, dlse, delta, lse2, dq, cu_seqlens_q, cu_seqlens_k, batch, group, has_left,
            has_right, wl, wr, scale, qk_scale, ROW_PAD,
        )  # fmt: skip
    else:

        def grid_q(meta):
            return (num_slots(tq, batch, meta["BLOCK_M"]), hq)

        launch(_attention_bwd_dq_kernel, grid_q,
            q, k, v, o, do, lse, dlse_arg, delta, lse2, dq, cu_seqlens_q, cu_seqlens_k,
            q.stride(0), q.stride(1), k.stride(0), k.stride(1), v.stride(0), v.stride(1),
            o.stride(0), o.stride(1), do.stride(0), do.stride(1), lse.stride(0), dlse_arg.stride(0),
            delta.stride(0), dq.stride(0), dq.stride(1),
            batch, group, wl, wr, scale, qk_scale, softcap_in, softcap_out, bucket,
            d, dv, bd, bdv, has_left, has_right, has_softcap, has_dlse, prec, ROW_PAD,
            (DQ_TMA != "0") if gluon else dq_use_tma(k, v),  # use_gluon checked K / V's TMA conditions already
        )  # fmt: skip
    if gluon:
        launch_dkdv_gluon(
            q, k, v, do, lse2, delta, dk, dvv, cu_seqlens_q, cu_seqlens_k, batch, group, has_left, has_right,
            wl, wr, scale, qk_scale, head_major, ROW_PAD,
        )  # fmt: skip
        return dq, dk, dvv
    # DQ_ACC is never touched with ATOMIC_DQ=False: any fp32 tensor will do
    launch(_attention_bwd_dkdv_kernel, grid_kv(hkv),
        q, k, v, do, lse2, delta, dk, dvv, delta, cu_seqlens_q, cu_seqlens_k,
        q.stride(0), q.stride(1), k.stride(0), k.stride(1), v.stride(0), v.stride(1),
        do.stride(0), do.stride(1), delta.stride(0),
        dk.stride(0), dk.stride(1), dvv.stride(0), dvv.stride(1),
        0, 0,
        batch, 0, group, wl, wr, scale, qk_scale, softcap_in, softcap_out, bucket, long_keys,
        d, dv, bd, bdv, has_left, has_right, has_softcap, False, head_major, prec, ROW_PAD,
        tma,
    )  # fmt: skip
    return dq, dk, dvv
