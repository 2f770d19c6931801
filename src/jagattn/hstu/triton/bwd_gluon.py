"""The HSTU backward's dK/dV and dQ kernels written in Gluon (Hopper, eager calls), and when to take them.

**dK/dV** (the default in its scope on large batches since session 31; ``JAGATTN_HSTU_GLUON=0`` keeps the Triton
kernel, ``=1`` takes it at any size). Same work, grid and outputs as ``bwd._hstu_bwd_kernel`` without
atomics (one program per key block of one (sequence, head) in the dense grid's ``_grouped`` order; dK / dV in fp32
registers; the contextual rows, then the main rows, then with a window the window-exempt last rows), with its wgmmas issued asynchronously and waited for by hand, as the attention kernel of
``attention/triton/bwd_gluon.py`` (session 26: 1.13-1.24x its Triton twin there). One step, per warpgroup::

    qk^T = K Q^T, dp^T = V dO^T           issued together
    wait qk^T  -> a = silu(alpha qk) (/ S), r = dsilu factor, both masked    (dp^T still running)
    dV += a dO                            issued
    wait dp^T  -> alpha ds = dp^T * r                                          (dV still running)
    dK += ds Q                            issued, then both retired before the next step

q / dO come through a two-stage ring filled by TMA (host-side descriptors over the packed ``[L, heads * D]`` views).
Unlike the Triton kernel's masked pointer loads, a TMA box reads whole rows: rows of a step outside its row range
(the contextual block's rows past ``C``, the window's rows) are real data, so every step whose rows leave its range
takes the masked branch, where the row-range test joins the SPEC mask. Rows past the sequence's end must be zeros,
not the next sequence's rows: they are the reduction dim of ``dV += a dO`` and ``dK += ds Q``, where a masked zero
times an inf / NaN row is NaN (session 27). Since session 41 (``DKDV_CLIP = 1``) q / dO load through
``_core.gluon.host_desc_to_end`` descriptors, whose boxes stop at the sequence's end (TMA fills the rest with zeros),
so nothing is zeroed in shared memory and a partial last block whose rows all see the key block skips the mask
(dK/dV kernel 2-5% faster, bitwise the same gradients); ``DKDV_CLIP = 0`` is the 2-D descriptor with the rows zeroed
in shared memory (``_core.gluon.zero_rows_from``, sessions 27-40). Scope: every mask (targets, contextual rows,
windows and window-exempt rows since session 31: the Triton kernels' row / key ranges, ``_visible_g``; the dK/dV
kernel takes a window only when forced, see ``use_gluon``), the dense grid (not ``JAGATTN_HSTU_COMPACT=1``), not the atomic dQ path, fp16 /
bf16, head dims 64 or 128; the Triton kernel runs everything else. See ``GLUON_SWITCH`` for why it was opt-in
until session 31 and why small batches still take the Triton kernel.

**dQ** (session 30, the default in the same scope at any size, windows since session 31; ``JAGATTN_HSTU_GLUON_DQ=0``
keeps the Triton kernel).
``fwd._hstu_fwd_kernel``'s ``MODE == 1`` (one program per query block of one (sequence, head), dQ in fp32 registers
over the visible key blocks in a fixed order, no atomics) on the attention dQ kernel's schedule: 64 query rows on 4 warps and 64-key K / V tiles in a two-stage TMA
ring, two programs per SM; qk and dp issued together, the dsilu factor under dp, ``dQ += ds K`` left in flight into
the next step. K / V boxes past a block's walked range are real keys (the Triton kernel loads them as zeros), so such
a block takes the masked branch with a range term, and keys past the sequence's end are zeroed in shared memory
(``DQ_CLIP = 0``: the 3-D boxes of ``host_desc_to_end`` measured 2.5-3.6% slower here, session 41). dq is
bit for bit the Triton kernel's (same operations, same key order; session 30 round 6 on B256 / B128 / B64 / recsys:
dQ kernel 0.955 -> 0.834, 1.68 -> 1.34, 2.72 -> 2.41, 0.229 -> 0.197 ms; backward 1.054 / 1.099 / 1.012 / 1.063x, same
process). Under torch.compile / export the Triton kernel runs, with the same bits. With a window the key range starts
at the window's lower bound ``lo`` (unaligned: a TMA box may start at any row), and blocks before ``t1`` (the window's
edge) take the mask too; the Triton dQ kernel walks 32-key tiles there (``fwd._DQ_SMALL_D_WINDOW``), which sum in the
same order, and dq was bit for bit the same on ctx6-w256 (session 31 rounds 6 and 8, ``JAGATTN_AUTOTUNE=0``).
"""

from __future__ import annotations

import torch

from ..._core import gluon as _g
from ..._core.env import env_choice
from ..._core.gluon import (
    GLUON,
    cta_barrier,
    gl,
    gluon,
    host_desc,
    mbarrier,
    tma_load_pair,
    tma_load_pair_walk,
    warpgroup_mma,
    warpgroup_mma_wait,
    zero_rows_from,
)
from ..._core.launch import launch

BLOCK_M, BLOCK_N, STAGES, WARPS = 64, 64, 2, 4
# dK/dV with a window: 32 query rows a step, 3 stages (the Triton kernel's window tile; measurement, see use_gluon)
WIN_BLOCK_M, WIN_STAGES = 32, 3
HEAD_DIMS = (64, 128)
# read at import; "0": the Triton dK/dV kernel; "1": the Gluon kernel in its scope at any size (the opt-in before
# session 31); "auto": also at least GLUON_MIN_TOKEN_HEADS rows x heads. Sessions 26-30 kept the kernel opt-in:
# 1.10-1.17x the Triton kernel with bitwise the same gradients, but the host-bound recsys row lost 5-35% to the
# launch's host-side TMA descriptors. Session 31 (H200): no B256 / B128 / ctx6 call waits on the host inside a
# forward + backward (round 1, device timeline), and round 3 (same process) read the backward 1.046x / 1.026x on B256
# / B128 with the Gluon kernel and 0.94x on recsys (52k tokens x 4 heads, ~1.1 ms of host time per call against
# ~0.6 ms of kernels); hence the size rule, host ints only: the launch's fixed host cost pays off on large batches.
# With a window "auto" keeps the Triton kernel (see use_gluon)
GLUON_SWITCH = env_choice("JAGATTN_HSTU_GLUON", ("auto", "0", "1"), "auto")
GLUON_MIN_TOKEN_HEADS = 1 << 19
# the dQ kernel (session 30): 64 query rows on 4 warps, 64-key K / V tiles, 2 stages, the default in its scope (round
# 6, H200, same process: dQ kernel 11-20% faster than the Triton one, backward 1.01-1.10x, dq bit for bit the Triton
# kernel's); JAGATTN_HSTU_GLUON_DQ=0 (read at import): the Triton dQ kernel
DQ_SWITCH = env_choice("JAGATTN_HSTU_GLUON_DQ", ("auto", "0"), "auto")
DQ_BLOCK_M, DQ_BLOCK_N, DQ_STAGES, DQ_WARPS = 64, 64, 2, 4
# how the boxes that walk a sequence (dK/dV: q / dO; dQ: K / V) treat rows past its end (``_core.gluon.
# tma_load_pair_walk``'s CLIP; read at import): "0": 2-D descriptors over all rows, the next sequence's rows zeroed
# in shared memory (``zero_rows_from``, sessions 27-40); "1": every box through a ``host_desc_to_end`` descriptor,
# whose rows past the end arrive as zeros from TMA (session 41); "2": only the box that reaches past the end through
# it. With "1" / "2" nothing is zeroed in shared memory and the dK/dV kernel's partial last block skips the mask.
# Session 41 (H200, same process, bitwise the same gradients): dK/dV kernel with 1 -4.0..4.7% (B256), -1.9..2.3%
# (B128), -1.7% (B64) against 0; 2 spills 24 B in the step loop and is slower. dQ: 1 is 2.5-3.6% slower than 0, 2
# equal to it (the 3-D boxes load slower there; the dQ kernel zeroes only its last block)
DKDV_CLIP = int(env_choice("JAGATTN_HSTU_DKDV_CLIP", ("0", "1", "2"), "1"))
DQ_CLIP = int(env_choice("JAGATTN_HSTU_DQ_CLIP", ("0", "1", "2"), "0"))


if GLUON:

    @gluon.jit
    def _ids_g(p, C, M, HAS_CTX: gl.constexpr, HAS_TARGETS: gl.constexpr):
        if HAS_CTX:
            p = gl.maximum(p - C + 1, 0)
        if HAS_TARGETS:
            p = gl.minimum(p, M)
        return p

    @gluon.jit
    def _first_pos_id_ge_g(x, C, HAS_CTX: gl.constexpr):
        """``mask._first_pos_id_ge``: the smallest position whose id is ``>= x`` (``x <= M``)."""
        if HAS_CTX:
            r = gl.where(x <= 0, 0, x + C - 1)
        else:
            r = gl.maximum(x, 0)
        return r

    @gluon.jit
    def _last_pos_id_le_g(x, n, C, M, HAS_CTX: gl.constexpr, HAS_TARGETS: gl.constexpr):
        """``mask._last_pos_id_le``: the largest position whose id is ``<= x`` (``x >= 0``), at most ``n - 1``."""
        if HAS_CTX:
            r = x + C - 1
        else:
            r = x
        if HAS_TARGETS:
            r = gl.where(x >= M, n - 1, r)
        return gl.minimum(r, n - 1)

    @gluon.jit
    def _visible_g(o_i, o_j, C, W, F, M, HAS_CTX: gl.constexpr, HAS_TARGETS: gl.constexpr,
                   HAS_WINDOW: gl.constexpr, HAS_FULL: gl.constexpr):  # fmt: skip
        """``mask._visible`` for broadcast query positions ``o_i`` and key positions ``o_j``."""
        id_i = _ids_g(o_i, C, M, HAS_CTX, HAS_TARGETS)
        id_j = _ids_g(o_j, C, M, HAS_CTX, HAS_TARGETS)
        vis = (o_i == o_j) | (id_i > id_j)
        if HAS_WINDOW:
            if HAS_FULL:
                vis = vis & ((id_i - id_j <= W) | (id_i >= M - F))
            else:
                vis = vis & (id_i - id_j <= W)
        if HAS_CTX:
            vis = vis | ((id_i == 0) & (id_j < M))
        return vis

    @gluon.jit
    def _dkdv_rows(t, n_ctx, nb, a0, f0, BLOCK_M: gl.constexpr):
        """The first query row of step ``t`` of the dK/dV loop: contextual rows ``[0, C)``, then the main rows from
        ``a0`` (``nb`` blocks), then the window-exempt rows from ``f0``."""
        u = t - n_ctx
        return gl.where(u < 0, t * BLOCK_M, gl.where(u < nb, a0 + u * BLOCK_M, f0 + (u - nb) * BLOCK_M))

    @gluon.jit
    def _grouped_g(pid, nblocks, B, H, GROUP):
        """``(i_b, i_h, k)`` of program ``pid`` in the dense grid's order (``schedule._grouped``: runs of ``GROUP``
        (sequence, head) pairs, the ``k``-th block of every pair of a run before the ``k + 1``-th)."""
        per_run = GROUP * nblocks
        run = pid // per_run
        local = pid - run * per_run
        size = gl.minimum(GROUP, B * H - run * GROUP)
        k = local // size
        pair = run * GROUP + (local - k * size)
        return pair // H, pair % H, k

    @gluon.jit
    def _tanh_approx_g(x):
        return gl.inline_asm_elementwise(
            "tanh.approx.f32 $0, $1;", "=r,r", [x], dtype=gl.float32, is_pure=True, pack=1
        )

    @gluon.jit
    def _hstu_bwd_dkdv_gluon_kernel(
        q_desc,
        k_desc,
        v_desc,
        do_desc,
        q_end,
        do_end,
        DK,
        DV,
        SEQ_OFFSETS,
        NUM_TARGETS,
        stride_dkn,
        stride_dkh,
        stride_dvn,
        stride_dvh,
        col_qh,
        col_kh,
        col_vh,
        col_doh,
        alpha,
        inv_s,
        C,
        W,
        F,
        B,
        H,
        MAX_ROWS,
        L2_GROUP,
        HEAD_DQ: gl.constexpr,
        HEAD_DV: gl.constexpr,
        HAS_CTX: gl.constexpr,
        HAS_TARGETS: gl.constexpr,
        HAS_WINDOW: gl.constexpr,
        HAS_FULL: gl.constexpr,
        FAST_SIGMOID: gl.constexpr,
        SCALE_LAST: gl.constexpr,
        BLOCK_M: gl.constexpr,
        BLOCK_N: gl.constexpr,
        STAGES: gl.constexpr,
        CLIP: gl.constexpr,
        num_warps: gl.constexpr,
    ):
        gl.static_assert(STAGES >= 2)
        alpha = alpha.to(gl.float32)
        inv_s = inv_s.to(gl.float32)
        scale_a = alpha * inv_s
        pid = gl.program_id(0)
        # the dense grid's order: first key blocks first
        i_b, i_h, i_nb = _grouped_g(pid, gl.cdiv(MAX_ROWS, BLOCK_N), B, H, L2_GROUP)
        bos = gl.load(SEQ_OFFSETS + i_b).to(gl.int32)
        n = gl.load(SEQ_OFFSETS + i_b + 1).to(gl.int32) - bos
        n0 = i_nb * BLOCK_N
        if n0 >= n:
            return
        n1 = gl.minimum(n0 + BLOCK_N, n)
        if HAS_TARGETS:
            T = gl.minimum(gl.maximum(gl.load(NUM_TARGETS + i_b).to(gl.int32), 0), n)
        else:
            T = n * 0
        U = n - T
        if HAS_CTX:
            M = U - C + 1
            ctx_end = gl.minimum(C, n)
            a0 = gl.maximum(n0, C)
        else:
            M = U
            ctx_end = n * 0
            a0 = n0
        # main rows [a0, a1): every later row (within the window) for a history key block, only the diagonal for a
        # target one; rows [n1, f_hi) see every key of the block (bwd.py's ranges)
        if HAS_WINDOW:
            a1 = gl.maximum(
                _last_pos_id_le_g(
                    _ids_g(n1 - 1, C, M, HAS_CTX, HAS_TARGETS) + W, n, C, M, HAS_CTX, HAS_TARGETS
                )
                + 1,
                n1,
            )
            f_hi = (
                _last_pos_id_le_g(_ids_g(n0, C, M, HAS_CTX, HAS_TARGETS) + W, n, C, M, HAS_CTX, HAS_TARGETS)
                + 1
            )
        else:
            a1 = n
            f_hi = n
        a1 = gl.where(n0 >= U, n1, a1)
        # ... when no key is a target (and the sequence has history)
        f_hi = gl.where((n1 > U) | (M <= 0), n1, f_hi)
        nb = gl.cdiv(gl.maximum(a1 - a0, 0), BLOCK_M)
        t1 = gl.minimum(gl.cdiv(gl.maximum(n1 - a0, 0), BLOCK_M), nb)
        # unmasked steps need every row inside [a0, a1) and inside [n1, f_hi): a partial last block reads rows of
        # the next sequence through TMA, so it stays masked (the Triton kernel's zero loads let it skip the mask)
        t2 = gl.minimum(gl.maximum(gl.minimum(f_hi, a1) - a0, 0) // BLOCK_M, nb)
        # with CLIP, rows past the sequence's end load as zeros: a partial last block ending at n is unmasked
        if CLIP != 0:
            t2 = gl.where(gl.minimum(f_hi, a1) >= n, nb, t2)
        t2 = gl.maximum(t1, t2)
        if (
            HAS_FULL
        ):  # (with a window) the last F history rows and the targets ignore it: rows [f0, n), masked
            f0 = gl.maximum(gl.maximum(a1, U - F), a0)
            n_full = gl.where(n0 < U, gl.cdiv(gl.maximum(n - f0, 0), BLOCK_M), 0)
        else:
            f0 = n
            n_full = n * 0
        n_ctx = gl.cdiv(ctx_end, BLOCK_M)
        total = n_ctx + nb + n_full

        s_layout: gl.constexpr = gl.NVMMADistributedLayout(
            version=[3, 0], warps_per_cta=[num_warps, 1], instr_shape=[16, BLOCK_M, 16]
        )
        k_layout: gl.constexpr = gl.NVMMADistributedLayout(
            version=[3, 0], warps_per_cta=[num_warps, 1], instr_shape=[16, HEAD_DQ, 16]
        )
        v_layout: gl.constexpr = gl.NVMMADistributedLayout(
            version=[3, 0], warps_per_cta=[num_warps, 1], instr_shape=[16, HEAD_DV, 16]
        )
        aa_layout: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=v_layout, k_width=2)
        dsa_layout: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=k_layout, k_width=2)
        col_layout: gl.constexpr = gl.SliceLayout(0, s_layout)
        row_layout: gl.constexpr = gl.SliceLayout(1, s_layout)

        k_smem = gl.allocate_shared_memory(k_desc.dtype, [BLOCK_N, HEAD_DQ], k_desc.layout)
        v_smem = gl.allocate_shared_memory(v_desc.dtype, [BLOCK_N, HEAD_DV], v_desc.layout)
        q_sl: gl.constexpr = gl.NVMMASharedLayout.get_default_for([BLOCK_M, HEAD_DQ], k_desc.dtype)
        do_sl: gl.constexpr = gl.NVMMASharedLayout.get_default_for([BLOCK_M, HEAD_DV], k_desc.dtype)
        q_smem = gl.allocate_shared_memory(k_desc.dtype, [STAGES, BLOCK_M, HEAD_DQ], q_sl)
        do_smem = gl.allocate_shared_memory(k_desc.dtype, [STAGES, BLOCK_M, HEAD_DV], do_sl)
        kv_bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
        ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
        mbarrier.init(kv_bar, count=1)
        for s in gl.static_range(STAGES):
            mbarrier.init(ready.index(s), count=1)
        tma_load_pair(k_desc, v_desc, bos + n0, i_h * col_kh, i_h * col_vh, kv_bar, k_smem, v_smem, True)
        for s in gl.static_range(STAGES - 1):  # prologue: steps 0 .. STAGES - 2
            pred = s < total
            m_s = _dkdv_rows(s, n_ctx, nb, a0, f0, BLOCK_M)
            tma_load_pair_walk(q_desc, do_desc, q_end, do_end, bos, m_s, n, i_h * col_qh, i_h * col_doh,
                               ready.index(s), q_smem.index(s), do_smem.index(s), pred, CLIP)  # fmt: skip

        dk = gl.zeros([BLOCK_N, HEAD_DQ], gl.float32, k_layout)
        dv = gl.zeros([BLOCK_N, HEAD_DV], gl.float32, v_layout)
        s_zero = gl.zeros([BLOCK_N, BLOCK_M], gl.float32, s_layout)
        o_j = n0 + gl.arange(0, BLOCK_N, layout=row_layout)
        mbarrier.wait(kv_bar, 0)

        for t in range(total):
            st = t % STAGES
            u = t - n_ctx
            in_ctx = u < 0
            in_full = u >= nb
            start_m = _dkdv_rows(t, n_ctx, nb, a0, f0, BLOCK_M)
            mbarrier.wait(ready.index(st), (t // STAGES) & 1)
            q_t = q_smem.index(st)
            do_t = do_smem.index(st)
            # without CLIP, a sequence's last, partial block holds the next sequence's rows: they become zeros
            if CLIP == 0:  # noqa: SIM102 (a constexpr branch around a run-time one)
                if start_m + BLOCK_M > n:
                    zero_rows_from(q_t, do_t, n - start_m, BLOCK_M, num_warps)
            qkT = warpgroup_mma(k_smem, q_t.permute((1, 0)), s_zero, use_acc=False, is_async=True)
            dpT = warpgroup_mma(v_smem, do_t.permute((1, 0)), s_zero, use_acc=False, is_async=True)
            qkT = warpgroup_mma_wait(1, deps=(qkT,))  # dp^T may still run
            # every warp has retired step t - 1 (the wait at its end): refill its stage with step t + STAGES - 1
            cta_barrier()
            nxt = t + STAGES - 1
            pred = nxt < total
            m_n = _dkdv_rows(nxt, n_ctx, nb, a0, f0, BLOCK_M)
            st2 = nxt % STAGES
            tma_load_pair_walk(q_desc, do_desc, q_end, do_end, bos, m_n, n, i_h * col_qh, i_h * col_doh,
                               ready.index(st2), q_smem.index(st2), do_smem.index(st2), pred, CLIP)  # fmt: skip

            # a = silu(alpha qk) / S and r with alpha ds = dp r (mask._silu_a_ds; SCALE_LAST leaves the constant
            # factors to the accumulators)
            if FAST_SIGMOID:
                hh = qkT * (0.5 * alpha)
                th = _tanh_approx_g(hh)
                pp = 1.0 + th
                r = hh * (1.0 - th * th) + pp
                if SCALE_LAST:
                    a = hh * pp
                else:
                    a = qkT * (0.5 * scale_a) * pp
                    r = r * (0.5 * scale_a)
            else:
                sig = 1.0 / (1.0 + gl.exp2(qkT * (-1.4426950408889634 * alpha)))
                r = sig * (1.0 + qkT * alpha * (1.0 - sig))
                if SCALE_LAST:
                    a = qkT * sig * alpha
                else:
                    a = qkT * sig * scale_a
                    r = r * scale_a
            if in_ctx | (u < t1) | (u >= t2):  # (u >= t2 covers the window-exempt rows)
                row_lo = gl.where(in_ctx, 0, gl.where(in_full, f0, a0))
                row_hi = gl.where(in_ctx, ctx_end, gl.where(in_full, n, a1))
                o_i = start_m + gl.arange(0, BLOCK_M, layout=col_layout)
                vis = _visible_g(
                    o_i[None, :], o_j[:, None], C, W, F, M, HAS_CTX, HAS_TARGETS, HAS_WINDOW, HAS_FULL
                )
                vis = vis & ((o_i >= row_lo) & (o_i < row_hi))[None, :]
                a = gl.where(vis, a, 0.0)
                r = gl.where(vis, r, 0.0)
            aa = gl.convert_layout(a.to(k_desc.dtype), aa_layout)
            dv = warpgroup_mma(aa, do_t, dv, is_async=True)
            dpT = warpgroup_mma_wait(1, deps=(dpT,))  # dV may still run
            ds = gl.convert_layout((dpT * r).to(k_desc.dtype), dsa_layout)
            dk = warpgroup_mma(ds, q_t, dk, is_async=True)
            dv, dk, aa, ds = warpgroup_mma_wait(0, deps=(dv, dk, aa, ds))

        for s in gl.static_range(STAGES):
            mbarrier.invalidate(ready.index(s))
        mbarrier.invalidate(kv_bar)

        if SCALE_LAST:
            if FAST_SIGMOID:
                dk = dk * (0.5 * scale_a)
            else:
                dk = dk * scale_a
            dv = dv * inv_s
        o_d = gl.arange(0, HEAD_DQ, layout=gl.SliceLayout(0, k_layout))
        o_nk = n0 + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(1, k_layout))
        rows_k = (bos + o_nk).to(gl.int64)
        p_dk = DK + rows_k[:, None] * stride_dkn + i_h * stride_dkh + o_d[None, :]
        gl.store(p_dk, dk.to(DK.dtype.element_ty), mask=(o_nk < n)[:, None] & (o_d < HEAD_DQ)[None, :])
        o_e = gl.arange(0, HEAD_DV, layout=gl.SliceLayout(0, v_layout))
        o_nv = n0 + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(1, v_layout))
        rows_v = (bos + o_nv).to(gl.int64)
        p_dv = DV + rows_v[:, None] * stride_dvn + i_h * stride_dvh + o_e[None, :]
        gl.store(p_dv, dv.to(DV.dtype.element_ty), mask=(o_nv < n)[:, None] & (o_e < HEAD_DV)[None, :])

    @gluon.jit
    def _hstu_bwd_dq_gluon_kernel(
        q_desc,
        k_desc,
        v_desc,
        do_desc,
        k_end,
        v_end,
        DQ_OUT,
        SEQ_OFFSETS,
        NUM_TARGETS,
        stride_dqm,
        stride_dqh,
        col_qh,
        col_kh,
        col_vh,
        col_doh,
        alpha,
        inv_s,
        C,
        W,
        F,
        B,
        H,
        MAX_ROWS,
        L2_GROUP,
        HEAD_DQ: gl.constexpr,
        HEAD_DV: gl.constexpr,
        HAS_CTX: gl.constexpr,
        HAS_TARGETS: gl.constexpr,
        HAS_WINDOW: gl.constexpr,
        HAS_FULL: gl.constexpr,
        FAST_SIGMOID: gl.constexpr,
        SCALE_LAST: gl.constexpr,
        BLOCK_M: gl.constexpr,
        BLOCK_N: gl.constexpr,
        STAGES: gl.constexpr,
        CLIP: gl.constexpr,
        CTX_KS: gl.constexpr,
        num_warps: gl.constexpr,
    ):
        """dQ of one query block of one (sequence, head): ``fwd._hstu_fwd_kernel``'s ``MODE == 1`` (no window, not
        cached, the dense grid) with the products issued asynchronously, as the attention dQ kernel of
        ``attention/triton/bwd_gluon.py``. K / V come through a TMA ring; a key block's rows outside its walked
        range are real data here (the Triton kernel loads them as zeros), so a block that leaves its range takes
        the masked branch with the range term, and rows past the sequence's end are zeroed in shared memory (they
        are dQ's reduction dim)."""
        gl.static_assert(STAGES >= 2)
        alpha = alpha.to(gl.float32)
        inv_s = inv_s.to(gl.float32)
        scale_a = alpha * inv_s
        pid = gl.program_id(0)
        # the dense grid's order: heaviest (last) query blocks first
        nmb = gl.cdiv(MAX_ROWS, BLOCK_M)
        i_b, i_h, kk = _grouped_g(pid, nmb, B, H, L2_GROUP)
        i_mb = nmb - 1 - kk
        bos = gl.load(SEQ_OFFSETS + i_b).to(gl.int32)
        n = gl.load(SEQ_OFFSETS + i_b + 1).to(gl.int32) - bos
        m0 = i_mb * BLOCK_M
        if m0 >= n:
            return
        if HAS_TARGETS:
            T = gl.minimum(gl.maximum(gl.load(NUM_TARGETS + i_b).to(gl.int32), 0), n)
        else:
            T = n * 0
        U = n - T
        if HAS_CTX:
            M = U - C + 1
        else:
            M = U
        m1 = gl.minimum(m0 + BLOCK_M, n)
        ctx_block = m0 < C  # contextual rows see every non-target key
        target_block = (m0 >= U) & (m0 >= C)  # only targets: the non-target prefix, then their own diagonal
        # bwd.ctx_split: the contextual rows' keys from CTX_KS on come summed from the dK/dV kernel
        if CTX_KS > 0:
            gl.static_assert(BLOCK_M <= CTX_KS)
            hi = gl.where(ctx_block, gl.maximum(gl.minimum(U, CTX_KS), m1), gl.where(target_block, U, m1))
        else:
            hi = gl.where(ctx_block, gl.maximum(U, m1), gl.where(target_block, U, m1))
        # the main keys [lo, hi); those in [lo_full, hi_full) are visible to every row of the block (fwd.py's
        # MODE == 1 ranges: the window's lower bound in id space, none for contextual or window-exempt rows)
        lo = n * 0
        lo_full = n * 0
        if HAS_WINDOW:
            keep = m0 >= C
            if HAS_FULL:
                keep = keep & (m1 - 1 < U - F)  # no row of the block ignores the window
            lo = gl.where(keep, _first_pos_id_ge_g(_ids_g(m0, C, M, HAS_CTX, HAS_TARGETS) - W, C, HAS_CTX), 0)
            lo_full = _first_pos_id_ge_g(_ids_g(m1 - 1, C, M, HAS_CTX, HAS_TARGETS) - W, C, HAS_CTX)
            if HAS_FULL:
                lo_full = gl.where(m0 >= U - F, 0, lo_full)
        # keys before the block's first row and before the first target are visible to every row
        hi_full = gl.where(M <= 0, 0, gl.minimum(m0, U))
        nb = gl.cdiv(gl.maximum(hi - lo, 0), BLOCK_N)
        # unmasked steps [t1, t2): every key inside [lo_full, min(hi_full, hi)) (a partial block reads keys past hi
        # through TMA, so it stays masked)
        t1 = gl.minimum(gl.cdiv(gl.maximum(lo_full - lo, 0), BLOCK_N), nb)
        t2 = gl.minimum(gl.maximum(gl.minimum(hi_full, hi) - lo, 0) // BLOCK_N, nb)
        t2 = gl.maximum(t1, t2)
        n_diag = gl.where(target_block, gl.cdiv(m1 - m0, BLOCK_N), 0)
        total = nb + n_diag

        s_layout: gl.constexpr = gl.NVMMADistributedLayout(
            version=[3, 0], warps_per_cta=[num_warps, 1], instr_shape=[16, BLOCK_N, 16]
        )
        q_layout: gl.constexpr = gl.NVMMADistributedLayout(
            version=[3, 0], warps_per_cta=[num_warps, 1], instr_shape=[16, HEAD_DQ, 16]
        )
        dsa_layout: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=q_layout, k_width=2)
        row_layout: gl.constexpr = gl.SliceLayout(1, s_layout)
        col_layout: gl.constexpr = gl.SliceLayout(0, s_layout)

        q_smem = gl.allocate_shared_memory(q_desc.dtype, [BLOCK_M, HEAD_DQ], q_desc.layout)
        do_smem = gl.allocate_shared_memory(do_desc.dtype, [BLOCK_M, HEAD_DV], do_desc.layout)
        k_sl: gl.constexpr = gl.NVMMASharedLayout.get_default_for([BLOCK_N, HEAD_DQ], q_desc.dtype)
        v_sl: gl.constexpr = gl.NVMMASharedLayout.get_default_for([BLOCK_N, HEAD_DV], q_desc.dtype)
        k_smem = gl.allocate_shared_memory(q_desc.dtype, [STAGES, BLOCK_N, HEAD_DQ], k_sl)
        v_smem = gl.allocate_shared_memory(q_desc.dtype, [STAGES, BLOCK_N, HEAD_DV], v_sl)
        qdo_bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
        ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
        mbarrier.init(qdo_bar, count=1)
        for s in gl.static_range(STAGES):
            mbarrier.init(ready.index(s), count=1)
        tma_load_pair(q_desc, do_desc, bos + m0, i_h * col_qh, i_h * col_doh, qdo_bar, q_smem, do_smem, True)
        for s in gl.static_range(STAGES - 1):  # prologue: steps 0 .. STAGES - 2
            pred = s < total
            n_s = gl.where(s < nb, lo + s * BLOCK_N, m0 + (s - nb) * BLOCK_N)
            tma_load_pair_walk(k_desc, v_desc, k_end, v_end, bos, n_s, n, i_h * col_kh, i_h * col_vh,
                               ready.index(s), k_smem.index(s), v_smem.index(s), pred, CLIP)  # fmt: skip

        dq = gl.zeros([BLOCK_M, HEAD_DQ], gl.float32, q_layout)
        s_zero = gl.zeros([BLOCK_M, BLOCK_N], gl.float32, s_layout)
        o_i = m0 + gl.arange(0, BLOCK_M, layout=row_layout)
        o_n0 = gl.arange(0, BLOCK_N, layout=col_layout)
        ds = gl.zeros([BLOCK_M, BLOCK_N], q_desc.dtype, dsa_layout)
        mbarrier.wait(qdo_bar, 0)
        for t in range(total):
            st = t % STAGES
            main = t < nb
            start_n = gl.where(main, lo + t * BLOCK_N, m0 + (t - nb) * BLOCK_N)
            range_hi = gl.where(main, hi, m1)
            mbarrier.wait(ready.index(st), (t // STAGES) & 1)
            k_t = k_smem.index(st)
            v_t = v_smem.index(st)
            if CLIP == 0:  # noqa: SIM102 (a constexpr branch around a run-time one)
                if start_n + BLOCK_N > n:  # the next sequence's keys: zeros before any product reads them
                    zero_rows_from(k_t, v_t, n - start_n, BLOCK_N, num_warps)
            qk = warpgroup_mma(q_smem, k_t.permute((1, 0)), s_zero, use_acc=False, is_async=True)
            dp = warpgroup_mma(do_smem, v_t.permute((1, 0)), s_zero, use_acc=False, is_async=True)
            qk, dq, ds = warpgroup_mma_wait(1, deps=(qk, dq, ds))  # retires dQ of step t - 1; dp may run
            cta_barrier()  # every warp has retired step t - 1: refill its stage with step t + STAGES - 1
            nxt = t + STAGES - 1
            pred = nxt < total
            n_n = gl.where(nxt < nb, lo + nxt * BLOCK_N, m0 + (nxt - nb) * BLOCK_N)
            st2 = nxt % STAGES
            tma_load_pair_walk(k_desc, v_desc, k_end, v_end, bos, n_n, n, i_h * col_kh, i_h * col_vh,
                               ready.index(st2), k_smem.index(st2), v_smem.index(st2), pred, CLIP)  # fmt: skip
            # r with alpha ds = dp r, in mask._silu_a_ds's order of operations
            if FAST_SIGMOID:
                hh = qk * (0.5 * alpha)
                th = _tanh_approx_g(hh)
                pp = 1.0 + th
                r = hh * (1.0 - th * th) + pp
            else:
                sig = 1.0 / (1.0 + gl.exp2(qk * (-1.4426950408889634 * alpha)))
            dp = warpgroup_mma_wait(0, deps=(dp,))
            if FAST_SIGMOID:
                if SCALE_LAST:
                    b_ds = dp * r
                else:
                    b_ds = dp * (0.5 * scale_a) * r
            else:
                if SCALE_LAST:
                    b_ds = dp * sig * (1.0 + qk * alpha * (1.0 - sig))
                else:
                    b_ds = dp * sig * (1.0 + qk * alpha * (1.0 - sig)) * scale_a
            if (t < t1) | (t >= t2) | (start_n + BLOCK_N > range_hi):
                o_j = start_n + o_n0
                vis = _visible_g(
                    o_i[:, None], o_j[None, :], C, W, F, M, HAS_CTX, HAS_TARGETS, HAS_WINDOW, HAS_FULL
                )
                vis = vis & (o_j < range_hi)[None, :]
                b_ds = gl.where(vis, b_ds, 0.0)
            ds = gl.convert_layout(b_ds.to(q_desc.dtype), dsa_layout)
            dq = warpgroup_mma(ds, k_t, dq, is_async=True)
            dq, ds = warpgroup_mma_wait(1, deps=(dq, ds))  # dQ of step t stays in flight into step t + 1
        dq, ds = warpgroup_mma_wait(0, deps=(dq, ds))
        for s in gl.static_range(STAGES):
            mbarrier.invalidate(ready.index(s))
        mbarrier.invalidate(qdo_bar)

        if SCALE_LAST:  # the constant factor the tiles left out (mask._ds_scale)
            if FAST_SIGMOID:
                dq = dq * (0.5 * scale_a)
            else:
                dq = dq * scale_a
        o_mq = m0 + gl.arange(0, BLOCK_M, layout=gl.SliceLayout(1, q_layout))
        o_d = gl.arange(0, HEAD_DQ, layout=gl.SliceLayout(0, q_layout))
        # the contextual rows' sum over the keys from CTX_KS on (bwd._hstu_ctx_dq_reduce, fwd._ctx_slot)
        if CTX_KS > 0:
            HALF: gl.constexpr = HEAD_DQ // 2
            # (no sum for a sequence without key blocks past CTX_KS)
            m_ctx = o_mq < gl.where(n > CTX_KS, C, 0)
            row_s = (bos + 2 * o_mq[:, None] + (o_d[None, :] >= HALF).to(gl.int32)).to(gl.int64)
            p_sum = (
                DQ_OUT.to(gl.pointer_type(gl.float32)) + row_s * (stride_dqm // 2) + i_h * (stride_dqh // 2)
            )
            p_sum = p_sum + (o_d % HALF)[None, :]
            dq = dq + gl.load(p_sum, mask=m_ctx[:, None] & (o_d < HEAD_DQ)[None, :], other=0.0)
        rows_q = (bos + o_mq).to(gl.int64)
        p_dq = DQ_OUT + rows_q[:, None] * stride_dqm + i_h * stride_dqh + o_d[None, :]
        gl.store(p_dq, dq.to(DQ_OUT.dtype.element_ty), mask=(o_mq < n)[:, None] & (o_d < HEAD_DQ)[None, :])


def use_gluon(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, do: torch.Tensor, max_attn_len: int, compact: bool
) -> bool:
    """Whether the backward's dK/dV runs the Gluon kernel: the scope of the module docstring, and ``GLUON_SWITCH``
    ("auto": at least ``GLUON_MIN_TOKEN_HEADS`` rows x heads and no window; "1": any size, windows too); the caller
    decides the atomic dQ path first (never Gluon). With a window the kernel is correct but slower than the Triton
    one (session 31 round 6, ctx6-w256: 1.161 against 0.854 ms; 255 registers and a 32-byte spill, locally), so
    "auto" leaves windows to the Triton kernel."""
    if GLUON_SWITCH == "0" or compact:
        return False
    if GLUON_SWITCH == "auto" and (max_attn_len > 0 or q.shape[0] * q.shape[1] < GLUON_MIN_TOKEN_HEADS):
        return False
    dq, dv = q.shape[-1], v.shape[-1]
    if dq not in HEAD_DIMS or dv not in HEAD_DIMS:
        return False
    return _g.hopper_eager_ok((q, dq), (do, dv), (k, dq), (v, dv))


def _dkdv_tile(window: bool) -> tuple[int, int]:
    """``(BLOCK_M, STAGES)`` of the dK/dV kernel: with a window the Triton kernel's 32-row window tile."""
    return (WIN_BLOCK_M, WIN_STAGES) if window else (BLOCK_M, STAGES)


def _launch_constexprs(dq_dim, dv_dim, num_targets, contextual_seq_len, max_attn_len, min_full_attn_seq_len,
                       fast_sigmoid, scale_last) -> dict:  # fmt: skip
    """The head dims and mask flags both kernels take (the window-exempt rows only exist with a window)."""
    return dict(
        HEAD_DQ=dq_dim, HEAD_DV=dv_dim, HAS_CTX=contextual_seq_len > 0, HAS_TARGETS=num_targets is not None,
        HAS_WINDOW=max_attn_len > 0, HAS_FULL=max_attn_len > 0 and min_full_attn_seq_len > 0,
        FAST_SIGMOID=fast_sigmoid, SCALE_LAST=scale_last,
    )  # fmt: skip


def launch_dkdv_gluon(
    do, q, k, v, dk, dv, seq_offsets, num_targets, max_seq_len, alpha, inv_scale, contextual_seq_len, max_attn_len,
    min_full_attn_seq_len, l2_group, fast_sigmoid, scale_last,
) -> None:  # fmt: skip
    """dK / dV into ``dk`` / ``dv`` (``use_gluon`` must hold)."""
    batch = seq_offsets.shape[0] - 1
    h, dq_dim, dv_dim = q.shape[1], q.shape[2], v.shape[2]
    grid = (-(-max_seq_len // BLOCK_N) * batch * h,)
    bm, stages = _dkdv_tile(max_attn_len > 0)
    clip = DKDV_CLIP
    q_2d, q_end = _g.walk_descs(q, bm, dq_dim, clip)
    do_2d, do_end = _g.walk_descs(do, bm, dv_dim, clip)
    launch(
        _hstu_bwd_dkdv_gluon_kernel, grid,
        q_2d, host_desc(k, BLOCK_N, dq_dim), host_desc(v, BLOCK_N, dv_dim), do_2d, q_end, do_end,
        dk, dv, seq_offsets,
        num_targets if num_targets is not None else seq_offsets,
        dk.stride(0), dk.stride(1), dv.stride(0), dv.stride(1), q.stride(1), k.stride(1), v.stride(1), do.stride(1),
        float(alpha), float(inv_scale), int(contextual_seq_len), int(max_attn_len), int(min_full_attn_seq_len), batch,
        h, max_seq_len, l2_group,
        **_launch_constexprs(dq_dim, dv_dim, num_targets, contextual_seq_len, max_attn_len, min_full_attn_seq_len,
                             fast_sigmoid, scale_last),
        BLOCK_M=bm, BLOCK_N=BLOCK_N, STAGES=stages, CLIP=clip, num_warps=WARPS,
    )  # fmt: skip


def compile_sm90(dq: int = 128, dv: int = 128, dtype: torch.dtype = torch.bfloat16, has_ctx: bool = False,
                 has_targets: bool = True, has_window: bool = False, has_full: bool = False,
                 clip: int | None = None):  # fmt: skip
    """Compile the kernel for sm_90 without a GPU (CI: the installed Triton's Gluon still builds it), with the
    settings a call of ``dtype`` takes (bf16: fast sigmoid, constant factors last)."""
    ty = _g._SIG_DTYPES[dtype]
    bm, stages = _dkdv_tile(has_window)
    bf16 = dtype == torch.bfloat16
    clip = DKDV_CLIP if clip is None else clip
    sig = {
        **_g.walk_desc_sigs(clip, "q_desc", "q_end", dtype, bm, dq), "k_desc": _g.desc_sig(dtype, BLOCK_N, dq),
        "v_desc": _g.desc_sig(dtype, BLOCK_N, dv), **_g.walk_desc_sigs(clip, "do_desc", "do_end", dtype, bm, dv),
        "DK": f"*{ty}", "DV": f"*{ty}", "SEQ_OFFSETS": "*i32", "NUM_TARGETS": "*i32",
    }  # fmt: skip
    for name in (
        "stride_dkn",
        "stride_dkh",
        "stride_dvn",
        "stride_dvh",
        "col_qh",
        "col_kh",
        "col_vh",
        "col_doh",
    ):
        sig[name] = "i32"
    sig["alpha"] = sig["inv_s"] = "fp32"
    for name in ("C", "W", "F", "B", "H", "MAX_ROWS", "L2_GROUP"):
        sig[name] = "i32"
    constexprs = {
        "HEAD_DQ": dq, "HEAD_DV": dv, "HAS_CTX": has_ctx, "HAS_TARGETS": has_targets, "HAS_WINDOW": has_window,
        "HAS_FULL": has_full, "FAST_SIGMOID": bf16, "SCALE_LAST": bf16, "BLOCK_M": bm, "BLOCK_N": BLOCK_N, "STAGES": stages,
        "CLIP": clip, **_g.none_constexprs(sig),
    }  # fmt: skip
    return _g.compile_sm90(_hstu_bwd_dkdv_gluon_kernel, sig, constexprs, WARPS)


def use_gluon_dq(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, do: torch.Tensor, compact: bool) -> bool:
    """Whether the dQ runs the Gluon kernel: not ``JAGATTN_HSTU_GLUON_DQ=0``, the dense grid, fp16 / bf16, head dims
    64 / 128, Hopper eager calls with TMA-loadable tensors; any mask (windows since session 31); the cached forward
    never comes here."""
    if DQ_SWITCH == "0" or compact:
        return False
    dq, dv = q.shape[-1], v.shape[-1]
    if dq not in HEAD_DIMS or dv not in HEAD_DIMS:
        return False
    return _g.hopper_eager_ok((q, dq), (do, dv), (k, dq), (v, dv))


def launch_dq_gluon(
    do, q, k, v, dq_out, seq_offsets, num_targets, max_seq_len, alpha, inv_scale, contextual_seq_len, max_attn_len,
    min_full_attn_seq_len, l2_group, fast_sigmoid, scale_last, ctx_ks=0,
) -> None:  # fmt: skip
    """dQ into ``dq_out`` (``use_gluon_dq`` must hold); ``ctx_ks`` as ``fwd._launch``'s."""
    batch = seq_offsets.shape[0] - 1
    h, dq_dim, dv_dim = q.shape[1], q.shape[2], v.shape[2]
    grid = (-(-max_seq_len // DQ_BLOCK_M) * batch * h,)
    clip = DQ_CLIP
    k_2d, k_end = _g.walk_descs(k, DQ_BLOCK_N, dq_dim, clip)
    v_2d, v_end = _g.walk_descs(v, DQ_BLOCK_N, dv_dim, clip)
    launch(
        _hstu_bwd_dq_gluon_kernel, grid,
        host_desc(q, DQ_BLOCK_M, dq_dim), k_2d, v_2d, host_desc(do, DQ_BLOCK_M, dv_dim), k_end, v_end,
        dq_out, seq_offsets,
        num_targets if num_targets is not None else seq_offsets,
        dq_out.stride(0), dq_out.stride(1), q.stride(1), k.stride(1), v.stride(1), do.stride(1),
        float(alpha), float(inv_scale), int(contextual_seq_len), int(max_attn_len), int(min_full_attn_seq_len), batch,
        h, max_seq_len, l2_group,
        **_launch_constexprs(dq_dim, dv_dim, num_targets, contextual_seq_len, max_attn_len, min_full_attn_seq_len,
                             fast_sigmoid, scale_last),
        BLOCK_M=DQ_BLOCK_M, BLOCK_N=DQ_BLOCK_N, STAGES=DQ_STAGES, CLIP=clip, CTX_KS=int(ctx_ks), num_warps=DQ_WARPS,
    )  # fmt: skip


def compile_dq_sm90(dq: int = 128, dv: int = 128, dtype: torch.dtype = torch.bfloat16, has_ctx: bool = False,
                    has_targets: bool = True, has_window: bool = False, has_full: bool = False,
                    clip: int | None = None, ctx_ks: int = 0):  # fmt: skip
    """Compile the dQ kernel for sm_90 without a GPU, with the settings a call of ``dtype`` takes."""
    ty = _g._SIG_DTYPES[dtype]
    bf16 = dtype == torch.bfloat16
    clip = DQ_CLIP if clip is None else clip
    sig = {
        "q_desc": _g.desc_sig(dtype, DQ_BLOCK_M, dq),
        **_g.walk_desc_sigs(clip, "k_desc", "k_end", dtype, DQ_BLOCK_N, dq),
        **_g.walk_desc_sigs(clip, "v_desc", "v_end", dtype, DQ_BLOCK_N, dv), "do_desc": _g.desc_sig(dtype, DQ_BLOCK_M, dv),
        "DQ_OUT": f"*{ty}", "SEQ_OFFSETS": "*i32", "NUM_TARGETS": "*i32",
    }  # fmt: skip
    for name in ("stride_dqm", "stride_dqh", "col_qh", "col_kh", "col_vh", "col_doh"):
        sig[name] = "i32"
    sig["alpha"] = sig["inv_s"] = "fp32"
    for name in ("C", "W", "F", "B", "H", "MAX_ROWS", "L2_GROUP"):
        sig[name] = "i32"
    constexprs = {
        "HEAD_DQ": dq, "HEAD_DV": dv, "HAS_CTX": has_ctx, "HAS_TARGETS": has_targets, "HAS_WINDOW": has_window,
        "HAS_FULL": has_full, "FAST_SIGMOID": bf16, "SCALE_LAST": bf16, "BLOCK_M": DQ_BLOCK_M, "BLOCK_N": DQ_BLOCK_N, "STAGES": DQ_STAGES,
        "CLIP": clip, "CTX_KS": ctx_ks, **_g.none_constexprs(sig),
    }  # fmt: skip
    return _g.compile_sm90(_hstu_bwd_dq_gluon_kernel, sig, constexprs, DQ_WARPS)
