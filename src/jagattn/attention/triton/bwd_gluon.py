"""The attention backward's dK/dV and dQ kernels written in Gluon (Hopper only), and when to take them.

Same work, inputs and outputs as ``bwd._attention_bwd_dkdv_kernel`` (one program per (key block, kv head),
dK/dV in fp32 registers over one flat loop of (query head of the GQA group, query block), lse2 / delta from
the row-padded buffers the dQ kernel wrote, no atomics), but every wgmma is issued asynchronously and waited
for by hand, which Triton's own pipeliner does not do for this loop (Triton 3.6 waits for every
non-accumulating wgmma at once, so a step's exp2 and dS work never overlapped its own products; sessions
16-24 found the Triton kernel waiting on its wgmmas). One step, per warpgroup::

    S^T = K Q^T, dP^T = V dO^T            issued together
    wait S^T          -> P^T = exp2(S^T * qk_scale - lse2), masks     (dP^T still running)
    dV += P^T dO      issued
    wait dP^T         -> dS^T = P^T (dP^T - delta)                    (dV still running)
    dK += dS^T Q      issued, then both retired before the next step

q / dO come through a ring of ``STAGES`` shared-memory stages filled by TMA (host-side descriptors over the
packed ``[rows, heads * D]`` views; a stage is refilled once every warp has retired the step that read it),
K / V through one TMA load per program. A query block that runs past its sequence's end (its last, partial
block) reads the next sequence's rows (or TMA's zeros past the tensor): they are zeroed in shared memory before
any product reads them (``_core.gluon.zero_rows_from``, at the end of the step before, under its dV / dK
products), and their lse2 is the padding rows' ``+inf``, their delta ``0``, so they add exactly nothing. Masking
their scores alone is not enough: they are the reduction dim of ``dV += P^T dO`` and ``dK += dS^T Q``, and a masked
zero times an inf / NaN there is NaN (session 27: one sequence's inf reached another's dK; the Triton kernel's
descriptors are bounded at the sequence's end). The zeroing cost of the backward (round 12, same process): mean 8192
Hkv 16 0.2%, mean 512 Hkv 16 2-3%, skewed 1-6% (noisy). A key block that runs past its sequence's end reads the
next sequence's keys: those rows of dK / dV are never stored and no sum runs over them.

Measured (session 26, H200, torch 2.11, Triton 3.6, bf16, D = 128; ``benchmarks/results/2026-11-26-s26-h200-round*``):
the dK/dV kernel 1.13-1.24x the Triton kernel's speed on the suite rows (rounds 2-3, 5), the backward 1.06-1.10x (round
3, same process), every output bit for bit the Triton kernel's (its products run in the same order; that is what keeps
eager and torch.compile, which runs the Triton kernel, equal). lse2 and delta are loaded together at the top of the
step (round 7: loading delta after the dV issue cost 3-11% on the GQA rows' dK/dV kernel, more spill). Measured and
not taken: dK kept in flight into the next step (0.90-0.98x, more spill), 3 stages (one program per SM: 0.53-0.58x),
128 key rows on 8 warps (0.73-0.92x), 32 query rows (no spill, 0.84-0.93x), the q / dO refill at the top of the step
(neutral), a heaviest-first launch order by a device-side argsort (0.81-1.0x: its launches cost more than the tail
saved; ``benchmarks/rounds/s26_round7_lpt_order.diff``), and session 26's Gluon dQ kernel (128 rows on 8 warps:
0.96-1.05x the backward, and its delta, summed over 8 lanes per row, broke the bitwise equality:
``benchmarks/rounds/s26_round5_gluon_dq.diff``; see the dQ kernel below for what session 30 changed).

**The dQ kernel** (``_attention_bwd_dq_gluon_kernel``, session 30) has the Triton dQ kernel's contract
(``bwd._attention_bwd_dq_kernel``: one program per (query block, query head), delta = rowsum(o * dO) - dlse and the
base-2 lse of its rows written to the row-padded buffers the dK/dV kernel reads, dQ in fp32 registers over the
visible key blocks) on 64 query rows and 64-key K / V tiles, 4 warps, 2 stages, so two programs share an SM and one's
exp2 work runs under the other's products (the Triton kernel's 128 rows on 8 warps keep both warpgroups in the same
phase, one program per SM). One step::

    S = Q K^T, dP = dO V^T                issued together; the wait for S also retires the previous step's dQ
    refill the stage the previous step read (every warp has retired it)
    P = exp2(S * qk_scale - lse2), masks  (dP still running)
    wait dP -> dS = P (dP - delta)
    dQ += dS K                            issued, left in flight into the next step (DEFER)

A partial last key block's rows past the sequence (the next sequence's keys and values, as the descriptor spans the
tensor) are zeroed in shared memory before that step's products: they are dQ's reduction dim. delta is summed over a
row in the Triton kernel's order (16 lanes of 8 elements per row, ``DELTA_TPW``), so dQ, and through delta dK, are
**bit for bit** the Triton kernels' (session 30 round 1; 8 lanes per row differed in the last bits, which is what
session 26's Gluon dQ kernel ran into). Measured (session 30, H200, same process,
``benchmarks/rounds/s30_dq_variants.py``): the dQ kernel 15-32% faster than the Triton kernel (mean 8192 Hkv 16
2.42 -> 2.05 ms, skewed 2.07 -> 1.68, mean 512 Hkv 16 0.54 -> 0.37), the backward 1.07-1.11x (round 2). Not taken:
the same tile without the deferred wait (0.96-0.99x the chosen one), 64x32 with 2 / 3 stages (0.93-1.02x; round 2);
128x64 on 8 warps, 128x128, 64x128 (0.94-1.05x the Triton dQ kernel's backward), the Triton kernel itself at 64x64
on 4 warps (0.94-1.06x; round 1). ``DQ_GLUON = False`` keeps the Triton dQ kernel (measurements).

Taken by ``attention_bwd`` where ``use_gluon`` holds (eager CUDA calls on compute capability 9.0, a Triton with
Gluon's Hopper API, fp16 / bf16, head dims 64 or 128, no softcap, not ``JAGATTN_ATTN_DQ=atomic``, q / dO / K / V
loadable by TMA with every head's columns inside one row); ``JAGATTN_ATTN_GLUON=0`` keeps both Triton kernels.
Under torch.compile / export the Triton kernels run; their results are the same bits. Gluon's API moves between
Triton releases (3.9 renamed the TMA load and the CTA barrier: both spellings are handled); ``tests/test_gluon.py``
builds both kernels with the installed Triton in CI, without a GPU.
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
    warpgroup_mma,
    warpgroup_mma_wait,
    zero_rows_from,
)
from ..._core.launch import launch
from .common import num_slots

# dK/dV (BLOCK_M, BLOCK_N, STAGES, warps): the spike's best (64 key rows per warpgroup, two programs per SM);
# session 26 round 4: BLOCK_M 32 with 3 / 4 stages (no spill) 0.84-0.93x, 32x128 on 8 warps 0.73-0.84x
BLOCK_M, BLOCK_N, STAGES, WARPS = 64, 64, 2, 4
HEAD_DIMS = (64, 128)
# dQ (BLOCK_M, BLOCK_N, STAGES, warps, DEFER: dQ's product left in flight into the next step, DELTA_TPW: lanes per
# row of delta's o / dO tile, 16 = the Triton dQ kernel's summation order): 64 query rows on 4 warps, two programs
# per SM (session 30 round 1: dQ kernel 15-32% faster than the Triton kernel's 128x64 / 8 warps; the Gluon kernel at
# that tile 0.95-1.04x the backward, 64x128 0.94-1.00x). DQ_GLUON False: the Triton dQ kernel (measurements).
DQ_BLOCK_M, DQ_BLOCK_N, DQ_STAGES, DQ_WARPS, DQ_DEFER, DQ_DELTA_TPW = 64, 64, 2, 4, True, 16
DQ_GLUON = True
GLUON_SWITCH = env_choice(
    "JAGATTN_ATTN_GLUON", ("auto", "0"), "auto"
)  # read at import: 0 = the Triton kernel


if GLUON:

    @gluon.jit
    def _seq_of_slot(CU, B, i_slot, BLOCK: gl.constexpr):
        """The sequence owning grid slot ``i_slot`` of the varlen schedule (common.py: sequence ``b``'s blocks of
        ``BLOCK`` rows start at slot ``CU[b] // BLOCK + b``): a binary search over ``CU``."""
        i_b = i_slot * 0
        hi_b = i_b + B
        while hi_b - i_b > 1:
            mid = (i_b + hi_b) // 2
            go_right = gl.load(CU + mid).to(gl.int32) // BLOCK + mid <= i_slot
            i_b = gl.where(go_right, mid, i_b)
            hi_b = gl.where(go_right, hi_b, mid)
        return i_b

    @gluon.jit
    def _attention_bwd_dkdv_gluon_kernel(
        q_desc,
        k_desc,
        v_desc,
        do_desc,
        LSE2,
        DELTA,
        DK,
        DV_OUT,
        CU_Q,
        CU_K,
        stride_dkt,
        stride_dkh,
        stride_dvt,
        stride_dvh,
        stride_pad_h,
        col_qh,
        col_doh,
        col_kh,
        col_vh,
        B,
        GROUP,
        window_left,
        window_right,
        scale,
        qk_scale,
        HEAD_D: gl.constexpr,
        HEAD_DV: gl.constexpr,
        HAS_LEFT: gl.constexpr,
        HAS_RIGHT: gl.constexpr,
        HEAD_MAJOR: gl.constexpr,
        ROW_PAD: gl.constexpr,
        BLOCK_M: gl.constexpr,
        BLOCK_N: gl.constexpr,
        STAGES: gl.constexpr,
        num_warps: gl.constexpr,
    ):
        gl.static_assert(STAGES >= 2)
        scale = scale.to(gl.float32)
        qk_scale = qk_scale.to(gl.float32)
        if HEAD_MAJOR:
            i_slot = gl.program_id(1)
            i_hk = gl.program_id(0)
        else:
            i_slot = gl.program_id(0)
            i_hk = gl.program_id(1)
        i_b = _seq_of_slot(CU_K, B, i_slot, BLOCK_N)
        bos_k = gl.load(CU_K + i_b).to(gl.int32)
        n0 = (i_slot - (bos_k // BLOCK_N + i_b)) * BLOCK_N
        lk = gl.load(CU_K + i_b + 1).to(gl.int32) - bos_k
        if n0 >= lk:
            return
        bos_q = gl.load(CU_Q + i_b).to(gl.int32)
        lq = gl.load(CU_Q + i_b + 1).to(gl.int32) - bos_q
        diag = lk - lq
        pad_q = (bos_q // ROW_PAD + i_b) * ROW_PAD

        # S^T / dP^T [BLOCK_N, BLOCK_M] and dK [BLOCK_N, D] / dV [BLOCK_N, Dv]: warps stacked along the key rows
        s_layout: gl.constexpr = gl.NVMMADistributedLayout(
            version=[3, 0], warps_per_cta=[num_warps, 1], instr_shape=[16, BLOCK_M, 16]
        )
        k_layout: gl.constexpr = gl.NVMMADistributedLayout(
            version=[3, 0], warps_per_cta=[num_warps, 1], instr_shape=[16, HEAD_D, 16]
        )
        v_layout: gl.constexpr = gl.NVMMADistributedLayout(
            version=[3, 0], warps_per_cta=[num_warps, 1], instr_shape=[16, HEAD_DV, 16]
        )
        # P^T and dS^T feed the next products from registers (the accumulator's fragments are the A operand's)
        pa_layout: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=v_layout, k_width=2)
        dsa_layout: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=k_layout, k_width=2)
        col_layout: gl.constexpr = gl.SliceLayout(0, s_layout)
        row_layout: gl.constexpr = gl.SliceLayout(1, s_layout)

        # query rows that see some key of the block: [lo, hi); rows that see all of them: [full_lo, full_hi)
        n_last = gl.minimum(n0 + BLOCK_N, lk) - 1
        lo = n0 * 0
        full_lo = lo
        hi = lq
        full_hi = lq
        if HAS_RIGHT:
            lo = gl.maximum(n0 - diag - window_right, 0)
            full_lo = gl.maximum(n_last - diag - window_right, 0)
        if HAS_LEFT:
            hi = gl.minimum(n_last - diag + window_left + 1, lq)
            full_hi = gl.minimum(n0 - diag + window_left + 1, lq)
        if n0 + BLOCK_N > lk:  # the padded key rows of a partial block must be masked everywhere
            full_hi = full_lo
        m_start = (lo // BLOCK_M) * BLOCK_M
        m_stop = m_start + gl.cdiv(gl.maximum(hi - m_start, 0), BLOCK_M) * BLOCK_M
        m_a = gl.minimum(m_start + gl.cdiv(gl.maximum(full_lo - m_start, 0), BLOCK_M) * BLOCK_M, m_stop)
        m_b = gl.minimum(m_a + (gl.maximum(full_hi - m_a, 0) // BLOCK_M) * BLOCK_M, m_stop)
        n_blocks = (m_stop - m_start) // BLOCK_M
        total = GROUP * n_blocks

        k_smem = gl.allocate_shared_memory(k_desc.dtype, [BLOCK_N, HEAD_D], k_desc.layout)
        v_smem = gl.allocate_shared_memory(v_desc.dtype, [BLOCK_N, HEAD_DV], v_desc.layout)
        q_smem = gl.allocate_shared_memory(q_desc.dtype, [STAGES, BLOCK_M, HEAD_D], q_desc.layout)
        do_smem = gl.allocate_shared_memory(do_desc.dtype, [STAGES, BLOCK_M, HEAD_DV], do_desc.layout)
        kv_bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
        ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
        mbarrier.init(kv_bar, count=1)
        for s in gl.static_range(STAGES):
            mbarrier.init(ready.index(s), count=1)

        tma_load_pair(k_desc, v_desc, bos_k + n0, i_hk * col_kh, i_hk * col_vh, kv_bar, k_smem, v_smem, True)
        # prologue: steps 0 .. STAGES - 2; step j + STAGES - 1 is loaded during step j (see the loop)
        for s in gl.static_range(STAGES - 1):
            pred = s < total
            g = s // gl.maximum(n_blocks, 1)
            m0 = m_start + (s - g * n_blocks) * BLOCK_M
            i_h = i_hk * GROUP + g
            tma_load_pair(q_desc, do_desc, bos_q + m0, i_h * col_qh, i_h * col_doh, ready.index(s), q_smem.index(s),
                          do_smem.index(s), pred)  # fmt: skip

        dk = gl.zeros([BLOCK_N, HEAD_D], gl.float32, k_layout)
        dv = gl.zeros([BLOCK_N, HEAD_DV], gl.float32, v_layout)
        s_zero = gl.zeros([BLOCK_N, BLOCK_M], gl.float32, s_layout)
        o_m0 = gl.arange(0, BLOCK_M, layout=col_layout)
        o_n = n0 + gl.arange(0, BLOCK_N, layout=row_layout)
        mbarrier.wait(kv_bar, 0)
        # A sequence's last, partial query block holds the next sequence's rows: they become zeros before any product
        # reads them (see _core.gluon.zero_rows_from). Step 0's here; every later one at the end of the step before
        # it, under that step's dV / dK products (zeroed at the top of its own step instead, the backward ran 1-3%
        # longer than without zeroing: session 27 round 11).
        if (total > 0) & (m_start + BLOCK_M > lq):
            mbarrier.wait(ready.index(0), 0)
            zero_rows_from(q_smem.index(0), do_smem.index(0), lq - m_start, BLOCK_M, num_warps)

        for j in range(total):
            st = j % STAGES
            g = j // n_blocks
            m0 = m_start + (j - g * n_blocks) * BLOCK_M
            i_h = i_hk * GROUP + g
            # lse2 and delta both here: the row offsets die at once (session 26 round 7: with delta loaded after
            # the dV issue, the dK/dV kernel ran 3-11% longer on the GQA rows, spilling 216 instead of 144 B)
            rows_pad = i_h.to(gl.int64) * stride_pad_h + pad_q + m0 + o_m0
            b_lse = gl.load(LSE2 + rows_pad)
            b_delta = gl.load(DELTA + rows_pad)
            mbarrier.wait(ready.index(st), (j // STAGES) & 1)
            q_t = q_smem.index(st)
            do_t = do_smem.index(st)
            sT = warpgroup_mma(k_smem, q_t.permute((1, 0)), s_zero, use_acc=False, is_async=True)
            dpT = warpgroup_mma(v_smem, do_t.permute((1, 0)), s_zero, use_acc=False, is_async=True)
            sT = warpgroup_mma_wait(1, deps=(sT,))  # dP^T may still run
            # every warp has retired step j - 1 (the wait at its end): refill its stage with step j + STAGES - 1
            cta_barrier()
            nxt = j + STAGES - 1
            pred = nxt < total
            g2 = nxt // n_blocks
            m2 = m_start + (nxt - g2 * n_blocks) * BLOCK_M
            i_h2 = i_hk * GROUP + g2
            st2 = nxt % STAGES
            tma_load_pair(q_desc, do_desc, bos_q + m2, i_h2 * col_qh, i_h2 * col_doh, ready.index(st2),
                          q_smem.index(st2), do_smem.index(st2), pred)  # fmt: skip

            pT = gl.exp2(sT * qk_scale - b_lse[None, :])
            if (m0 < m_a) | (m0 >= m_b):
                o_m = m0 + o_m0
                vis = (o_m < lq)[None, :] & (o_n < lk)[:, None]
                if HAS_LEFT:
                    vis = vis & (o_n[:, None] >= o_m[None, :] + (diag - window_left))
                if HAS_RIGHT:
                    vis = vis & (o_n[:, None] <= o_m[None, :] + (diag + window_right))
                pT = gl.where(vis, pT, 0.0)
            a = gl.convert_layout(pT.to(do_desc.dtype), pa_layout)
            dv = warpgroup_mma(a, do_t, dv, is_async=True)
            dpT = warpgroup_mma_wait(1, deps=(dpT,))  # dV may still run
            dsT = pT * (dpT - b_delta[None, :])
            ds = gl.convert_layout(dsT.to(q_desc.dtype), dsa_layout)
            dk = warpgroup_mma(ds, q_t, dk, is_async=True)
            # the next step's block, when partial: its TMA was issued in this step (or earlier) into another stage
            j1 = j + 1
            g1 = j1 // n_blocks
            m1 = m_start + (j1 - g1 * n_blocks) * BLOCK_M
            if (j1 < total) & (m1 + BLOCK_M > lq):
                st1 = j1 % STAGES
                mbarrier.wait(ready.index(st1), (j1 // STAGES) & 1)
                zero_rows_from(q_smem.index(st1), do_smem.index(st1), lq - m1, BLOCK_M, num_warps)
            dv, dk, a, ds = warpgroup_mma_wait(0, deps=(dv, dk, a, ds))

        for s in gl.static_range(STAGES):
            mbarrier.invalidate(ready.index(s))
        mbarrier.invalidate(kv_bar)

        o_d = gl.arange(0, HEAD_D, layout=gl.SliceLayout(0, k_layout))
        o_nk = n0 + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(1, k_layout))
        rows_k = (bos_k + o_nk).to(gl.int64)
        p_dk = DK + rows_k[:, None] * stride_dkt + i_hk * stride_dkh + o_d[None, :]
        gl.store(
            p_dk, (dk * scale).to(DK.dtype.element_ty), mask=(o_nk < lk)[:, None] & (o_d < HEAD_D)[None, :]
        )
        o_dv = gl.arange(0, HEAD_DV, layout=gl.SliceLayout(0, v_layout))
        o_nv = n0 + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(1, v_layout))
        rows_v = (bos_k + o_nv).to(gl.int64)
        p_dv = DV_OUT + rows_v[:, None] * stride_dvt + i_hk * stride_dvh + o_dv[None, :]
        gl.store(p_dv, dv.to(DV_OUT.dtype.element_ty), mask=(o_nv < lk)[:, None] & (o_dv < HEAD_DV)[None, :])

    @gluon.jit
    def _attention_bwd_dq_gluon_kernel(
        q_desc,
        k_desc,
        v_desc,
        do_desc,
        O,
        LSE,
        DLSE,
        DELTA,
        LSE2,
        DQ,
        CU_Q,
        CU_K,
        stride_ot,
        stride_oh,
        stride_lse_h,
        stride_dlse_h,
        stride_pad_h,
        stride_dqt,
        stride_dqh,
        col_qh,
        col_doh,
        col_kh,
        col_vh,
        B,
        GROUP,
        window_left,
        window_right,
        scale,
        qk_scale,
        HEAD_D: gl.constexpr,
        HEAD_DV: gl.constexpr,
        HAS_LEFT: gl.constexpr,
        HAS_RIGHT: gl.constexpr,
        HAS_DLSE: gl.constexpr,
        ROW_PAD: gl.constexpr,
        BLOCK_M: gl.constexpr,
        BLOCK_N: gl.constexpr,
        STAGES: gl.constexpr,
        DEFER: gl.constexpr,
        DELTA_TPW: gl.constexpr,
        num_warps: gl.constexpr,
    ):
        """dQ of one (query block, query head), and delta / lse2 of its rows in the row-padded layout for the
        dK/dV kernel (the Triton dQ kernel's contract, ``bwd._attention_bwd_dq_kernel``). A partial last key
        block's rows past the sequence (the next sequence's keys) are zeroed in shared memory before any product
        reads them (they are dQ's reduction dim)."""
        gl.static_assert(STAGES >= 2)
        scale = scale.to(gl.float32)
        qk_scale = qk_scale.to(gl.float32)
        i_slot = gl.num_programs(0) - 1 - gl.program_id(0)  # the last (heaviest when causal) blocks first
        i_h = gl.program_id(1)
        i_b = _seq_of_slot(CU_Q, B, i_slot, BLOCK_M)
        bos_q = gl.load(CU_Q + i_b).to(gl.int32)
        m0 = (i_slot - (bos_q // BLOCK_M + i_b)) * BLOCK_M
        lq = gl.load(CU_Q + i_b + 1).to(gl.int32) - bos_q
        if m0 >= lq:
            return
        bos_k = gl.load(CU_K + i_b).to(gl.int32)
        lk = gl.load(CU_K + i_b + 1).to(gl.int32) - bos_k
        i_hk = i_h // GROUP
        diag = lk - lq

        s_layout: gl.constexpr = gl.NVMMADistributedLayout(
            version=[3, 0], warps_per_cta=[num_warps, 1], instr_shape=[16, BLOCK_N, 16]
        )
        q_layout: gl.constexpr = gl.NVMMADistributedLayout(
            version=[3, 0], warps_per_cta=[num_warps, 1], instr_shape=[16, HEAD_D, 16]
        )
        dsa_layout: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=q_layout, k_width=2)
        row_layout: gl.constexpr = gl.SliceLayout(1, s_layout)
        col_layout: gl.constexpr = gl.SliceLayout(0, s_layout)
        # o / dO rows for delta: 16-byte vectors along the head dim, DELTA_TPW lanes per row
        blk: gl.constexpr = gl.BlockedLayout([1, 8], [32 // DELTA_TPW, DELTA_TPW], [num_warps, 1], [1, 0])

        q_smem = gl.allocate_shared_memory(q_desc.dtype, [BLOCK_M, HEAD_D], q_desc.layout)
        do_smem = gl.allocate_shared_memory(do_desc.dtype, [BLOCK_M, HEAD_DV], do_desc.layout)
        k_smem = gl.allocate_shared_memory(k_desc.dtype, [STAGES, BLOCK_N, HEAD_D], k_desc.layout)
        v_smem = gl.allocate_shared_memory(v_desc.dtype, [STAGES, BLOCK_N, HEAD_DV], v_desc.layout)
        qdo_bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
        ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
        mbarrier.init(qdo_bar, count=1)
        for s in gl.static_range(STAGES):
            mbarrier.init(ready.index(s), count=1)
        tma_load_pair(
            q_desc, do_desc, bos_q + m0, i_h * col_qh, i_h * col_doh, qdo_bar, q_smem, do_smem, True
        )

        # key blocks that some row of the block sees: [lo, hi); that every row sees: [full_lo, full_hi)
        m_last = gl.minimum(m0 + BLOCK_M, lq) - 1
        lo = m0 * 0
        full_lo = lo
        hi = lk
        full_hi = lk
        if HAS_LEFT:
            lo = gl.maximum(m0 + diag - window_left, 0)
            full_lo = gl.maximum(m_last + diag - window_left, 0)
        if HAS_RIGHT:
            hi = gl.minimum(m_last + diag + window_right + 1, lk)
            full_hi = gl.minimum(m0 + diag + window_right + 1, lk)
        n_start = (lo // BLOCK_N) * BLOCK_N
        n_stop = n_start + gl.cdiv(gl.maximum(hi - n_start, 0), BLOCK_N) * BLOCK_N
        n_a = gl.minimum(n_start + gl.cdiv(gl.maximum(full_lo - n_start, 0), BLOCK_N) * BLOCK_N, n_stop)
        n_b = gl.minimum(n_a + (gl.maximum(full_hi - n_a, 0) // BLOCK_N) * BLOCK_N, n_stop)
        total = (n_stop - n_start) // BLOCK_N
        for s in gl.static_range(STAGES - 1):
            tma_load_pair(k_desc, v_desc, bos_k + n_start + s * BLOCK_N, i_hk * col_kh, i_hk * col_vh, ready.index(s),
                          k_smem.index(s), v_smem.index(s), s < total)  # fmt: skip

        # lse2 (+inf where no key is visible, and past the sequence) and delta = rowsum(o * dO) - dlse
        o_mb = m0 + gl.arange(0, BLOCK_M, layout=gl.SliceLayout(1, blk))
        m_mb = o_mb < lq
        o_cb = gl.arange(0, HEAD_DV, layout=gl.SliceLayout(0, blk))
        rows_o = (bos_q + o_mb).to(gl.int64)
        b_o = gl.load(O + rows_o[:, None] * stride_ot + i_h * stride_oh + o_cb[None, :], mask=m_mb[:, None],
                      other=0.0)  # fmt: skip
        lse_row = i_h.to(gl.int64) * stride_lse_h + bos_q + o_mb
        b_lse = gl.load(LSE + lse_row, mask=m_mb, other=float("inf"))
        b_lse = gl.where(b_lse == float("-inf"), float("inf"), b_lse * 1.4426950408889634)
        mbarrier.wait(qdo_bar, 0)
        b_do = do_smem.load(blk)
        b_delta = gl.sum(b_o.to(gl.float32) * b_do.to(gl.float32), axis=1)
        if HAS_DLSE:
            b_delta -= gl.load(DLSE + i_h.to(gl.int64) * stride_dlse_h + bos_q + o_mb, mask=m_mb, other=0.0)
        pad_row0 = i_h.to(gl.int64) * stride_pad_h + (bos_q // ROW_PAD + i_b) * ROW_PAD
        gl.store(DELTA + pad_row0 + o_mb, b_delta, mask=m_mb)
        gl.store(LSE2 + pad_row0 + o_mb, b_lse, mask=m_mb)
        if m0 + BLOCK_M >= lq:
            # the last block also fills the padding rows [lq, ROW_PAD-aligned end): lse2 = +inf, delta = 0
            pad_layout: gl.constexpr = gl.BlockedLayout([1], [32], [num_warps], [0])
            o_p = (lq // ROW_PAD) * ROW_PAD + gl.arange(0, ROW_PAD, layout=pad_layout)
            gl.store(DELTA + pad_row0 + o_p, gl.zeros([ROW_PAD], gl.float32, pad_layout), mask=o_p >= lq)
            gl.store(
                LSE2 + pad_row0 + o_p,
                gl.full([ROW_PAD], float("inf"), gl.float32, pad_layout),
                mask=o_p >= lq,
            )
        lse_s = gl.convert_layout(b_lse, row_layout)
        delta_s = gl.convert_layout(b_delta, row_layout)

        dq = gl.zeros([BLOCK_M, HEAD_D], gl.float32, q_layout)
        s_zero = gl.zeros([BLOCK_M, BLOCK_N], gl.float32, s_layout)
        o_m = m0 + gl.arange(0, BLOCK_M, layout=row_layout)
        o_n0 = gl.arange(0, BLOCK_N, layout=col_layout)
        ds = gl.zeros([BLOCK_M, BLOCK_N], q_desc.dtype, dsa_layout)
        for j in range(total):
            st = j % STAGES
            n0 = n_start + j * BLOCK_N
            mbarrier.wait(ready.index(st), (j // STAGES) & 1)
            k_t = k_smem.index(st)
            v_t = v_smem.index(st)
            if n0 + BLOCK_N > lk:  # the next sequence's keys: zeros before any product reads them
                zero_rows_from(k_t, v_t, lk - n0, BLOCK_N, num_warps)
            sc = warpgroup_mma(q_smem, k_t.permute((1, 0)), s_zero, use_acc=False, is_async=True)
            dp = warpgroup_mma(do_smem, v_t.permute((1, 0)), s_zero, use_acc=False, is_async=True)
            sc, dq, ds = warpgroup_mma_wait(1, deps=(sc, dq, ds))  # retires dQ_{j-1} (in order); dP may run
            cta_barrier()  # every warp has retired step j - 1: refill its stage with step j + STAGES - 1
            nxt = j + STAGES - 1
            pred = nxt < total
            st2 = nxt % STAGES
            tma_load_pair(k_desc, v_desc, bos_k + n_start + nxt * BLOCK_N, i_hk * col_kh, i_hk * col_vh,
                          ready.index(st2), k_smem.index(st2), v_smem.index(st2), pred)  # fmt: skip
            p = gl.exp2(sc * qk_scale - lse_s[:, None])
            if (n0 < n_a) | (n0 >= n_b):
                o_n = n0 + o_n0
                vis = (o_n < lk)[None, :]
                if HAS_LEFT:
                    vis = vis & (o_n[None, :] >= o_m[:, None] + (diag - window_left))
                if HAS_RIGHT:
                    vis = vis & (o_n[None, :] <= o_m[:, None] + (diag + window_right))
                p = gl.where(vis, p, 0.0)
            dp = warpgroup_mma_wait(0, deps=(dp,))
            ds = gl.convert_layout((p * (dp - delta_s[:, None])).to(q_desc.dtype), dsa_layout)
            dq = warpgroup_mma(ds, k_t, dq, is_async=True)
            if DEFER:  # dQ_j stays in flight into the next step, whose first wait retires it
                dq, ds = warpgroup_mma_wait(1, deps=(dq, ds))
            else:
                dq, ds = warpgroup_mma_wait(0, deps=(dq, ds))
        dq, ds = warpgroup_mma_wait(0, deps=(dq, ds))
        for s in gl.static_range(STAGES):
            mbarrier.invalidate(ready.index(s))
        mbarrier.invalidate(qdo_bar)

        o_mq = m0 + gl.arange(0, BLOCK_M, layout=gl.SliceLayout(1, q_layout))
        o_d = gl.arange(0, HEAD_D, layout=gl.SliceLayout(0, q_layout))
        rows_q = (bos_q + o_mq).to(gl.int64)
        p_dq = DQ + rows_q[:, None] * stride_dqt + i_h * stride_dqh + o_d[None, :]
        gl.store(
            p_dq, (dq * scale).to(DQ.dtype.element_ty), mask=(o_mq < lq)[:, None] & (o_d < HEAD_D)[None, :]
        )


def use_gluon(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, do: torch.Tensor, softcap: float, atomic_dq: bool
) -> bool:
    """Whether ``attention_bwd`` runs the Gluon dK/dV and dQ kernels: a Triton with Gluon's Hopper API, eager calls
    on a compute capability 9.0 device (wgmma), fp16 / bf16, D and Dv in ``HEAD_DIMS``, no softcap, the
    separate dQ kernel (not ``JAGATTN_ATTN_DQ=atomic``), q / dO / K / V loadable by TMA
    (``_core.tma.tma_loads_ok``: 16-byte aligned, contiguous last dim; never under torch.compile, export or
    opcheck) with every head's columns inside one row. ``JAGATTN_ATTN_GLUON=0`` disables it."""
    if GLUON_SWITCH == "0" or atomic_dq or softcap > 0:
        return False
    d, dv = q.shape[-1], v.shape[-1]
    if d not in HEAD_DIMS or dv not in HEAD_DIMS:
        return False
    return _g.hopper_eager_ok((q, d), (do, dv), (k, d), (v, dv))


def launch_dkdv_gluon(
    q, k, v, do, lse2, delta, dk, dv_out, cu_seqlens_q, cu_seqlens_k, batch, group, has_left, has_right,
    window_left, window_right, scale, qk_scale, head_major, row_pad,
) -> None:  # fmt: skip
    """dK / dV into ``dk`` / ``dv_out`` (see the module docstring; ``use_gluon`` must hold)."""
    tk, hkv = k.shape[0], k.shape[1]
    d, dv = q.shape[-1], v.shape[-1]
    slots = num_slots(tk, batch, BLOCK_N)
    grid = (hkv, slots) if head_major else (slots, hkv)
    launch(
        _attention_bwd_dkdv_gluon_kernel, grid,
        host_desc(q, BLOCK_M, d), host_desc(k, BLOCK_N, d), host_desc(v, BLOCK_N, dv), host_desc(do, BLOCK_M, dv),
        lse2, delta, dk, dv_out, cu_seqlens_q, cu_seqlens_k,
        dk.stride(0), dk.stride(1), dv_out.stride(0), dv_out.stride(1), delta.stride(0),
        q.stride(1), do.stride(1), k.stride(1), v.stride(1),
        batch, group, window_left, window_right, float(scale), float(qk_scale),
        HEAD_D=d, HEAD_DV=dv, HAS_LEFT=has_left, HAS_RIGHT=has_right, HEAD_MAJOR=head_major, ROW_PAD=row_pad,
        BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, STAGES=STAGES, num_warps=WARPS,
    )  # fmt: skip


def compile_sm90(d: int = 128, dv: int = 128, dtype: torch.dtype = torch.bfloat16, has_left: bool = False,
                 has_right: bool = True, head_major: bool = False, row_pad: int = 64):  # fmt: skip
    """Compile the kernel for sm_90 without a GPU, with the module's current settings (CI checks that the installed
    Triton's Gluon still builds it; benchmarks read registers and spills). Returns Triton's compiled kernel."""
    ty = _g._SIG_DTYPES[dtype]
    sig = {
        "q_desc": _g.desc_sig(dtype, BLOCK_M, d), "k_desc": _g.desc_sig(dtype, BLOCK_N, d),
        "v_desc": _g.desc_sig(dtype, BLOCK_N, dv), "do_desc": _g.desc_sig(dtype, BLOCK_M, dv),
        "LSE2": "*fp32", "DELTA": "*fp32", "DK": f"*{ty}", "DV_OUT": f"*{ty}", "CU_Q": "*i32", "CU_K": "*i32",
    }  # fmt: skip
    for name in ("stride_dkt", "stride_dkh", "stride_dvt", "stride_dvh", "stride_pad_h", "col_qh", "col_doh",
                 "col_kh", "col_vh", "B", "GROUP", "window_left", "window_right"):  # fmt: skip
        sig[name] = "i32"
    sig["scale"] = sig["qk_scale"] = "fp32"
    constexprs = {
        "HEAD_D": d, "HEAD_DV": dv, "HAS_LEFT": has_left, "HAS_RIGHT": has_right, "HEAD_MAJOR": head_major,
        "ROW_PAD": row_pad, "BLOCK_M": BLOCK_M, "BLOCK_N": BLOCK_N, "STAGES": STAGES,
    }  # fmt: skip
    return _g.compile_sm90(_attention_bwd_dkdv_gluon_kernel, sig, constexprs, WARPS)


def _delta_tpw(dv: int) -> int:
    """Lanes per row of the dQ kernel's delta tile: ``DQ_DELTA_TPW``, at most one 8-element vector per lane."""
    return min(DQ_DELTA_TPW, dv // 8)


def launch_dq_gluon(
    q, k, v, o, do, lse, dlse, delta, lse2, dq, cu_seqlens_q, cu_seqlens_k, batch, group, has_left, has_right,
    window_left, window_right, scale, qk_scale, row_pad,
) -> None:  # fmt: skip
    """dQ into ``dq`` and delta / lse2 into their row-padded buffers (``dlse`` may be None)."""
    tq, hq = q.shape[0], q.shape[1]
    d, dv = q.shape[-1], v.shape[-1]
    has_dlse = dlse is not None
    dlse_arg = dlse if has_dlse else delta
    grid = (num_slots(tq, batch, DQ_BLOCK_M), hq)
    launch(
        _attention_bwd_dq_gluon_kernel, grid,
        host_desc(q, DQ_BLOCK_M, d), host_desc(k, DQ_BLOCK_N, d), host_desc(v, DQ_BLOCK_N, dv),
        host_desc(do, DQ_BLOCK_M, dv),
        o, lse, dlse_arg, delta, lse2, dq, cu_seqlens_q, cu_seqlens_k,
        o.stride(0), o.stride(1), lse.stride(0), dlse_arg.stride(0), delta.stride(0), dq.stride(0), dq.stride(1),
        q.stride(1), do.stride(1), k.stride(1), v.stride(1),
        batch, group, window_left, window_right, float(scale), float(qk_scale),
        HEAD_D=d, HEAD_DV=dv, HAS_LEFT=has_left, HAS_RIGHT=has_right, HAS_DLSE=has_dlse, ROW_PAD=row_pad,
        BLOCK_M=DQ_BLOCK_M, BLOCK_N=DQ_BLOCK_N, STAGES=DQ_STAGES, DEFER=DQ_DEFER,
        DELTA_TPW=_delta_tpw(dv), num_warps=DQ_WARPS,
    )  # fmt: skip


def compile_dq_sm90(d: int = 128, dv: int = 128, dtype: torch.dtype = torch.bfloat16, has_left: bool = False,
                    has_right: bool = True, has_dlse: bool = False, row_pad: int = 64):  # fmt: skip
    """Compile the dQ kernel for sm_90 without a GPU with the module's current dQ settings."""
    ty = _g._SIG_DTYPES[dtype]
    sig = {
        "q_desc": _g.desc_sig(dtype, DQ_BLOCK_M, d), "k_desc": _g.desc_sig(dtype, DQ_BLOCK_N, d),
        "v_desc": _g.desc_sig(dtype, DQ_BLOCK_N, dv), "do_desc": _g.desc_sig(dtype, DQ_BLOCK_M, dv),
        "O": f"*{ty}", "LSE": "*fp32", "DLSE": "*fp32", "DELTA": "*fp32", "LSE2": "*fp32", "DQ": f"*{ty}",
        "CU_Q": "*i32", "CU_K": "*i32",
    }  # fmt: skip
    for name in ("stride_ot", "stride_oh", "stride_lse_h", "stride_dlse_h", "stride_pad_h", "stride_dqt",
                 "stride_dqh", "col_qh", "col_doh", "col_kh", "col_vh", "B", "GROUP", "window_left",
                 "window_right"):  # fmt: skip
        sig[name] = "i32"
    sig["scale"] = sig["qk_scale"] = "fp32"
    constexprs = {
        "HEAD_D": d, "HEAD_DV": dv, "HAS_LEFT": has_left, "HAS_RIGHT": has_right, "HAS_DLSE": has_dlse,
        "ROW_PAD": row_pad, "BLOCK_M": DQ_BLOCK_M, "BLOCK_N": DQ_BLOCK_N, "STAGES": DQ_STAGES, "DEFER": DQ_DEFER,
        "DELTA_TPW": _delta_tpw(dv),
    }  # fmt: skip
    return _g.compile_sm90(_attention_bwd_dq_gluon_kernel, sig, constexprs, DQ_WARPS)
