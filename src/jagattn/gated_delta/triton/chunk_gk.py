"""Chunked gated delta rule with per-key gates ``gk``: forward and backward kernels (chunk ``BT = 64``).

The scalar-gate kernels (``chunk_fwd.py``, ``chunk_bwd.py``) are untouched; these run when ``gk`` is
given. The scalar gate ``g`` is folded in: the per-key log decay of token ``t`` is ``g_t + gk_t[d]``,
and ``Gc_t[d]`` is its chunk-local inclusive cumulative sum (fp32). Per chunk and value head, with
``S0`` the entering state (all products below are fp32 or tf32 dots of fp32 operands)::

    A_ts = beta_t sum_d k_t[d] k_s[d] exp(Gc_t[d] - Gc_s[d])   (s < t)      T = (I + A)^-1
    P_ts =        sum_d q_t[d] k_s[d] exp(Gc_t[d] - Gc_s[d])   (s <= t)
    W = T (beta exp(Gc) * K) ;  U~ = T (beta * V) ;  U = U~ - W S0
    O = scale ((exp(Gc) * Q) S0 + P U)
    S = diag(exp(Gc_last)) S0 + (exp(Gc_last - Gc) * K)^T U

Stability: ``Gc`` reaches hundreds inside a chunk, so ``exp(-Gc)`` is never formed. ``A`` and ``P`` are
built from 16-row sub-blocks: an off-diagonal block (rows in block ``i``, columns in an earlier block
``j``) is ``(x_i exp(Gc_i - c)) (k_j exp(c - Gc_j))^T`` with ``c`` the ``Gc`` of the row before block
``i`` (both exponents <= 0 for gates <= 0); a diagonal block ``sum_d x_t[d] k_s[d] exp(Gc_t[d] - Gc_s[d])``
(``s <= t``) is built one column ``s`` at a time from ``[16, BK]`` tiles (``_diag_ap``; every exponent
<= 0). The backward's sums of the same shape (``sum_s M_ts k_s exp(Gc_t - Gc_s)`` and
``sum_t M_ts y_t exp(Gc_t - Gc_s)``) use the same off-diagonal split; their diagonal blocks (``_diag_bwd``)
pair the rows in four levels (``_lvl``), each pair through a reference row between the two, so that
they too are tensor-core dots with exponents <= 0.

Backward (``dS`` = gradient of the state leaving the chunk)::

    dU  = scale P^T dO + (exp(Gc_last - Gc) * K) dS ;  dS0 = exp(Gc_last) dS + scale (exp(Gc) Q)^T dO - W^T dU
    dW  = -dU S0^T ;  dX = T^T dW  (X = beta exp(Gc) K) ;  dT = dW X^T + dU (beta V)^T ;  dA = -T^T dT T^T
    dP  = scale dO U^T ;  dV = beta T^T dU

and the gradient of every use of ``Gc``: ``dGc_t += x_t * (d/dx_t)`` for every gated factor of a row
(``q`` in ``P`` and ``exp(Gc) Q``, ``beta k`` in ``A``, ``k`` in ``X``), minus the same for every column
factor (``k`` in ``P``, ``A`` and ``exp(Gc_last - Gc) K``), the last row also taking
``exp(Gc_last) sum_v S0 dS + sum_t k_t . d(exp(Gc_last - Gc_t) k_t)``. ``dgk`` is the reverse
cumulative sum of ``dGc`` inside the chunk and ``dg = sum_d dgk``.

Kernels: forward ``cumsum`` (Gc) -> ``kkt`` (A, P and T by 16x16 blocks) -> ``wu`` -> ``h`` (sequential
state pass, per-key decay) -> ``o``; backward recomputes the forward's intermediates, then
``dv_local`` (P^T dO) -> ``dhu`` (reverse state pass) -> ``h`` (states and ``sum_v S0 dS``) -> ``wy``
(dT, dA, dP, dV, the WY part of dK) -> ``dqk`` (per key block: the dense and the block-split terms of
dQ, dK, dGc) -> ``gate`` (reverse cumsum, dg, dbeta). Intermediates (W, U~, U, the per-chunk states)
are fp32 for every input dtype: the per-key gate gradient is a sum of nearly cancelling terms.
No ``tl.trans`` of a dot result anywhere (see ``common.py``); matrices needed transposed (T, P, dA,
dP) are stored and loaded transposed.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from ..._core.alloc import new_empty
from ..._core.launch import launch
from .chunk_fwd import _store_ainv16
from .common import (
    BT,
    _chunk_of,
    _chunk_of_slot,
    _exp,
    _floor_gate,
    _inv16,
    block_k,
    dot_precision,
    exact_exp,
    num_slots,
)

# key-column tiles of the kkt and dqk kernels and the warps of every launch: chosen (session 3, with
# the [16, 16, BK] diagonal broadcasts of then) by compiling for sm_90 and reading the register use.
# Session 4 on the H200 (Triton 3.6, H16 8 x 4096 bf16, benchmarks/gated_delta_probe.py): with the
# column-loop diagonals, kkt takes 7.3 ms per call at 16 columns, 4.8 at 32, 4.3 at 64, but 32 and 64
# give WRONG outputs there (max relative difference to the 16-column run 1.7-1.8; the interpreter
# agrees with 16 to 1e-8): a Triton 3.6 miscompile, not isolated. 16 is the tile the gpu tests pass
# with; do not widen it without a device check.
KKT_BK = 16
DQK_BK = 32
# The diagonal 16-row blocks: dqk by tensor-core dots over four pairing levels (`_diag_bwd`, session 37:
# backward 17.47 -> 16.61 ms against the column loop it replaced, H16 8 x 4096 strong gk, H200); kkt keeps the
# column loop (`_diag_ap`): the same split there (dots [16, BK] x [BK, 16]) gave wrong, run-to-run different
# A / P at tf32 with 16 key columns on the H200 (Triton 3.6; right at exact fp32 products and at 32 columns,
# where it was slower than the loop: benchmarks/results/2026-11-27-s37-h200-round{4,5}).
# warps of the kkt and dqk launches (the other launches: WARPS). Session 37 on the H200 (H16 8 x 4096,
# strong gk, column loops; fwd / bwd ms): 8 warps 10.49 / 24.45, 4 warps 7.43 / 17.47, 2 warps
# 5.76 / 15.76 (benchmarks/gk_diag_check.py, results 2026-11-27-s37-h200-round6); dqk at 2 warps was slower
# (round 7). Session 38 on an H100 (same script, final dqk): kkt at 4 warps 7.53 / 16.43, at 2 warps
# 5.79 / 14.97, with 32 key columns 6.14 / 15.29; WY and the other launches at 4 warps 7.36 / 16.80 and
# 7.29 / 17.16 (results 2026-11-27-s38-h100-round1). Session 37 kept kkt at 4 warps because
# test_gpu_gk_compile_fullgraph compared torch.compile's output with eager's bitwise and the 2-warp kkt
# gave 1 bf16 ulp on 4 of 102400 elements; its no-grad probe showed the 4-warp kkt differing from eager
# under compile too (round 8). Inductor compiles the user kernels with its own argument specialisation
# (the alignment of the buffers it allocates), which may change the layouts and hence the fp32 reduction
# order: a rounding difference, not a bug. The test now allows 2 bf16 ulps.
KKT_WARPS = 2
DQK_WARPS = 4
# launch knobs of the WY backward kernel (module constants so a device experiment can override them:
# benchmarks/fuzz_spec_rule.py --set). BC >= 32: at BC=16 (dk=16) Triton 3.6 on H200 compiled this
# kernel into an invalid shared-memory read (compute-sanitizer: 2048-byte __shared__ read out of
# bounds in a tl.dot; CUDA illegal memory access; session 9 GPU fuzz). BC=32 or 4 warps both ran clean.
WY_BC_MIN = 32
WY_BV = 64
WY_WARPS = 8
WARPS = 8
# V block of the sequential state passes (h, dhu), also for V < 32 (masked): at BV=16 with K=128 the
# dhu kernel compiled by Triton 3.6 read shared memory out of bounds (512-byte __shared__ read,
# compute-sanitizer; dk=128 dv=16, session 9 GPU fuzz)
BV_SEQ = 32
BV_PAR = 64  # V block of the chunk-parallel kernels (o, dv_local, loops in wy and dqk); never < 64


@triton.jit
def _ld(P, rows, m_r, i_x, cols, m_c, NX: tl.constexpr, D: tl.constexpr):
    """``[R, C]`` fp32 tile of a ``[T, NX, D]`` tensor (head ``i_x``); zeros outside the masks."""
    p = (rows.to(tl.int64)[:, None] * NX + i_x) * D + cols[None, :]
    return tl.load(P + p, mask=m_r[:, None] & m_c[None, :], other=0.0).to(tl.float32)


@triton.jit
def _ldg(GC, rows, m_r, i_x, cols, m_c, NX: tl.constexpr, D: tl.constexpr):
    """A tile of the cumulative gates in their stored dtype (fp64 for fp32 inputs: see ``gate_dtype``);
    differences of them are formed in that dtype and rounded to fp32 only inside ``_e``."""
    p = (rows.to(tl.int64)[:, None] * NX + i_x) * D + cols[None, :]
    return tl.load(GC + p, mask=m_r[:, None] & m_c[None, :], other=0.0)


@triton.jit
def _e(x, EXACT: tl.constexpr):
    return _exp(x.to(tl.float32), EXACT)


@triton.jit
def _st(P, x, rows, m_r, i_x, cols, m_c, NX: tl.constexpr, D: tl.constexpr):
    p = (rows.to(tl.int64)[:, None] * NX + i_x) * D + cols[None, :]
    tl.store(P + p, x.to(P.dtype.element_ty), mask=m_r[:, None] & m_c[None, :])


@triton.jit
def _rows(row0, b: tl.constexpr, eos):
    r = row0 + b * 16 + tl.arange(0, 16)
    return r, r < eos


@triton.jit
def _ref(GC, row0, b: tl.constexpr, eos, i_hv, o_k, m_k, HV: tl.constexpr, K: tl.constexpr):
    """``Gc`` of the row before block ``b`` (clamped to the sequence's last row): the reference point,
    <= every ``Gc`` of earlier rows and >= every ``Gc`` of block ``b`` (gates <= 0)."""
    r = tl.minimum(row0 + b * 16 - 1, eos - 1).to(tl.int64)
    return tl.load(GC + (r * HV + i_hv) * K + o_k, mask=m_k, other=0.0)


@triton.jit
def _blk(M, row0, bi: tl.constexpr, bj: tl.constexpr, eos, i_hv, HV: tl.constexpr, BT: tl.constexpr):
    """Block ``(bi, bj)`` of a ``[T, HV, BT]`` chunk matrix as ``[16 rows, 16 cols]``."""
    r, m = _rows(row0, bi, eos)
    o = tl.arange(0, 16)
    return tl.load(
        M + (r.to(tl.int64)[:, None] * HV + i_hv) * BT + bj * 16 + o[None, :], mask=m[:, None], other=0.0
    )


@triton.jit
def _blk_t(M, row0, bi: tl.constexpr, bj: tl.constexpr, eos, i_hv, HV: tl.constexpr, BT: tl.constexpr):
    """Block ``(bi, bj)`` loaded transposed: ``[16 cols, 16 rows]``."""
    r, m = _rows(row0, bi, eos)
    o = tl.arange(0, 16)
    return tl.load(
        M + (r.to(tl.int64)[None, :] * HV + i_hv) * BT + bj * 16 + o[:, None], mask=m[None, :], other=0.0
    )


@triton.jit
def _dot(a, b, DOT_PREC: tl.constexpr):
    return tl.dot(a, b, input_precision=DOT_PREC)


@triton.jit
def _off(xi, gi, mi, kj, gj, mj, c, DOT_PREC: tl.constexpr, EXACT: tl.constexpr):
    """``sum_d xi[t, d] kj[s, d] exp(gi[t, d] - gj[s, d])`` through the reference ``c`` (both
    exponents <= 0)."""
    a = xi * _e(tl.where(mi[:, None], gi - c[None, :], 0.0), EXACT)
    b = kj * _e(tl.where(mj[:, None], c[None, :] - gj, 0.0), EXACT)
    return _dot(a, tl.trans(b), DOT_PREC)


@triton.jit
def _row(P, r, eos, i_x, cols, m_c, NX: tl.constexpr, D: tl.constexpr):
    """Row ``r`` (a scalar; zeros from ``eos`` on) of a ``[T, NX, D]`` tensor as a ``[C]`` vector in
    its stored dtype."""
    m = m_c & ((cols * 0 + r) < eos)
    return tl.load(P + (r.to(tl.int64) * NX + i_x) * D + cols, mask=m, other=0.0)


@triton.jit
def _diag_ap(K_, GC, q_i, k_i, g_i, m_i, row0, b: tl.constexpr, eos, i_h, i_hv, o_k, m_k,
             H: tl.constexpr, HV: tl.constexpr, K: tl.constexpr, EXACT: tl.constexpr):  # fmt: skip
    """Diagonal block ``b`` of A (before beta and the strict mask) and P over the key columns
    ``o_k``: ``[t, s] = sum_d y_t[d] k_s[d] exp(g_t[d] - g_s[d])`` for ``s <= t`` on valid rows, one
    column ``s`` at a time from 2-D ``[16, BK]`` tiles (the ``[16, 16, BK]`` broadcast this replaces
    took 7.7 ms per call on H16 8 x 4096: layout shuffles, not arithmetic)."""
    o16 = tl.arange(0, 16)
    a = tl.zeros([16, 16], dtype=tl.float32)
    p = tl.zeros([16, 16], dtype=tl.float32)
    # columns from eos on are zero (their k is masked): stop at the sequence's end
    for j in range(tl.minimum(eos - row0 - b * 16, 16)):
        r_j = row0 + b * 16 + j
        k_j = _row(K_, r_j, eos, i_h, o_k, m_k, H, K).to(tl.float32)
        g_j = _row(GC, r_j, eos, i_hv, o_k, m_k, HV, K)
        keep = ((o16 >= j) & m_i)[:, None]
        ke = k_j[None, :] * tl.where(keep, _e(tl.where(keep, g_i - g_j[None, :], 0.0), EXACT), 0.0)
        col = o16[None, :] == j
        a = tl.where(col, tl.sum(k_i * ke, 1)[:, None], a)
        p = tl.where(col, tl.sum(q_i * ke, 1)[:, None], p)
    return a, p


@triton.jit
def _lvl(GC, g_i, m_i, row0, b: tl.constexpr, eos, i_hv, o_k, m_k, M: tl.constexpr, HV: tl.constexpr,
         K: tl.constexpr, EXACT: tl.constexpr):  # fmt: skip
    """Level ``M`` (8, 4, 2, 1) of the dot split of diagonal block ``b``: the block's rows pair up in
    groups of ``2M``; a pair ``(t, s)`` with ``t`` in the upper and ``s`` in the lower half of one group
    has ``exp(Gc_t - Gc_s) = el_t * er_s`` through the group's reference ``c`` (the ``Gc`` of the last
    row of its lower half, clamped to the sequence's last row), ``el = exp(Gc_t - c)``,
    ``er = exp(c - Gc_s)``, both exponents <= 0. Every pair ``s < t`` of the block lies in exactly one
    level (the highest bit where ``t`` and ``s`` differ). Returns ``el`` and ``er`` as ``[16, BK]``
    tiles (``el`` 0 off the upper halves, ``er`` 0 off the lower halves, both 0 from ``eos`` on) and
    ``same[t, s]``: the pair lies in one group."""
    o16 = tl.arange(0, 16)
    r_c = tl.minimum(row0 + b * 16 + (o16 // (2 * M)) * (2 * M) + M - 1, eos - 1)
    c = _ldg(GC, r_c, r_c >= 0, i_hv, o_k, m_k, HV, K)
    half = (o16 % (2 * M)) >= M
    up = (half & m_i)[:, None]
    lo = (~half & m_i)[:, None]
    el = tl.where(up, _e(tl.where(up, g_i - c, 0.0), EXACT), 0.0)
    er = tl.where(lo, _e(tl.where(lo, c - g_i, 0.0), EXACT), 0.0)
    same = (o16[:, None] // (2 * M)) == (o16[None, :] // (2 * M))
    return el, er, same


@triton.jit
def _diag_bwd(GC, DP, DA, q_i, k_i, g_i, beta_i, m_i, row0, b: tl.constexpr, eos, i_hv, o_k, m_k,
              HV: tl.constexpr, K: tl.constexpr, BT: tl.constexpr, DOT_PREC: tl.constexpr,
              EXACT: tl.constexpr):  # fmt: skip
    """Diagonal block ``b`` of the backward's gated sums, strictly below the diagonal
    (``e_ts = exp(Gc_t - Gc_s)`` per key column, ``s < t``): row sums ``rp_t = sum_s dP_ts k_s e_ts`` and
    ``ra_t`` (dA), column sums ``cp_s = sum_t dP_ts q_t e_ts`` and ``ca_s = sum_t dA_ts beta_t k_t e_ts``.
    By tensor-core dots per level of ``_lvl`` (session 37; it replaced a loop over the block's 16 rows):
    with ``M`` the block's ``dP`` / ``dA`` restricted to the level's pairs, ``rp += el * (M_P (k er))``,
    ``cp += er * (M_P^T (q el))``, the same for dA with ``beta k`` (``M^T`` loaded transposed)."""
    mp = _blk(DP, row0, b, b, eos, i_hv, HV, BT)
    ma = _blk(DA, row0, b, b, eos, i_hv, HV, BT)
    mpt = _blk_t(DP, row0, b, b, eos, i_hv, HV, BT)
    mat = _blk_t(DA, row0, b, b, eos, i_hv, HV, BT)
    kb = k_i * beta_i[:, None]
    rp = tl.zeros_like(k_i)
    ra = tl.zeros_like(k_i)
    cp = tl.zeros_like(k_i)
    ca = tl.zeros_like(k_i)
    for lv in tl.static_range(4):
        el, er, same = _lvl(GC, g_i, m_i, row0, b, eos, i_hv, o_k, m_k, 8 >> lv, HV, K, EXACT)
        kr = k_i * er
        rp += el * _dot(tl.where(same, mp, 0.0), kr, DOT_PREC)
        ra += el * _dot(tl.where(same, ma, 0.0), kr, DOT_PREC)
        cp += er * _dot(tl.where(same, mpt, 0.0), q_i * el, DOT_PREC)
        ca += er * _dot(tl.where(same, mat, 0.0), kb * el, DOT_PREC)
    return rp, ra, cp, ca


# ---------------------------------------------------------------------------------------------
# forward


@triton.jit
def _gated_delta_fwd_gk_cumsum_kernel(
    G, GK, GC, CU, N, HV: tl.constexpr, K: tl.constexpr, BT: tl.constexpr, BK: tl.constexpr
):
    """``Gc = chunk-local inclusive cumsum of (g + gk)`` ``[T, HV, K]`` fp32, per chunk and value head."""
    i_s, row0, eos = _chunk_of_slot(CU, N, BT)
    if row0 >= eos:
        return
    i_hv = tl.program_id(1)
    o_t = tl.arange(0, BT)
    rows = row0 + o_t
    m_t = rows < eos
    o_k = tl.arange(0, BK)
    m_k = o_k < K
    gdt = GC.dtype.element_ty
    raw = _ld(GK, rows, m_t, i_hv, o_k, m_k, HV, K).to(gdt)
    raw += tl.load(G + rows.to(tl.int64) * HV + i_hv, mask=m_t, other=0.0).to(tl.float32).to(gdt)[:, None]
    raw = tl.where(m_t[:, None] & m_k[None, :], _floor_gate(raw), 0.0)  # (g + gk = -inf: common.GATE_FLOOR)
    _st(GC, tl.cumsum(raw, 0), rows, m_t, i_hv, o_k, m_k, HV, K)


@triton.jit
def _gated_delta_fwd_gk_kkt_kernel(
    Q,
    K_,
    GC,
    BETA,
    AINV,
    PQK,
    CU,
    N,
    H: tl.constexpr,
    HV: tl.constexpr,
    K: tl.constexpr,
    BT: tl.constexpr,
    BKB: tl.constexpr,
    DOT_PREC: tl.constexpr,
    EXACT_EXP: tl.constexpr,
):
    """Per chunk and value head: the 16x16 blocks of A and P summed over key tiles of ``BKB``, then
    ``T = (I + A)^-1`` by blocks (as the scalar ``kkt_solve``) into AINV and P into PQK (zeros above
    the diagonal), both ``[T, HV, BT]`` fp32."""
    i_s, row0, eos = _chunk_of_slot(CU, N, BT)
    if row0 >= eos:
        return
    i_hv = tl.program_id(1)
    i_h = i_hv // (HV // H)
    r0, m0 = _rows(row0, 0, eos)
    r1, m1 = _rows(row0, 1, eos)
    r2, m2 = _rows(row0, 2, eos)
    r3, m3 = _rows(row0, 3, eos)
    o16 = tl.arange(0, 16)
    strict = o16[:, None] > o16[None, :]
    z = tl.zeros([16, 16], dtype=tl.float32)
    a00, a11, a22, a33, a10, a20, a21, a30, a31, a32 = z, z, z, z, z, z, z, z, z, z
    p00, p11, p22, p33, p10, p20, p21, p30, p31, p32 = z, z, z, z, z, z, z, z, z, z
    for i_k in range(0, tl.cdiv(K, BKB)):
        o_k = i_k * BKB + tl.arange(0, BKB)
        m_k = o_k < K
        k0 = _ld(K_, r0, m0, i_h, o_k, m_k, H, K)
        k1 = _ld(K_, r1, m1, i_h, o_k, m_k, H, K)
        k2 = _ld(K_, r2, m2, i_h, o_k, m_k, H, K)
        k3 = _ld(K_, r3, m3, i_h, o_k, m_k, H, K)
        q0 = _ld(Q, r0, m0, i_h, o_k, m_k, H, K)
        q1 = _ld(Q, r1, m1, i_h, o_k, m_k, H, K)
        q2 = _ld(Q, r2, m2, i_h, o_k, m_k, H, K)
        q3 = _ld(Q, r3, m3, i_h, o_k, m_k, H, K)
        g0 = _ldg(GC, r0, m0, i_hv, o_k, m_k, HV, K)
        g1 = _ldg(GC, r1, m1, i_hv, o_k, m_k, HV, K)
        g2 = _ldg(GC, r2, m2, i_hv, o_k, m_k, HV, K)
        g3 = _ldg(GC, r3, m3, i_hv, o_k, m_k, HV, K)
        c1 = _ref(GC, row0, 1, eos, i_hv, o_k, m_k, HV, K)
        c2 = _ref(GC, row0, 2, eos, i_hv, o_k, m_k, HV, K)
        c3 = _ref(GC, row0, 3, eos, i_hv, o_k, m_k, HV, K)
        da, dp = _diag_ap(K_, GC, q0, k0, g0, m0, row0, 0, eos, i_h, i_hv, o_k, m_k, H, HV, K, EXACT_EXP)
        a00 += da
        p00 += dp
        da, dp = _diag_ap(K_, GC, q1, k1, g1, m1, row0, 1, eos, i_h, i_hv, o_k, m_k, H, HV, K, EXACT_EXP)
        a11 += da
        p11 += dp
        da, dp = _diag_ap(K_, GC, q2, k2, g2, m2, row0, 2, eos, i_h, i_hv, o_k, m_k, H, HV, K, EXACT_EXP)
        a22 += da
        p22 += dp
        da, dp = _diag_ap(K_, GC, q3, k3, g3, m3, row0, 3, eos, i_h, i_hv, o_k, m_k, H, HV, K, EXACT_EXP)
        a33 += da
        p33 += dp
        a10 += _off(k1, g1, m1, k0, g0, m0, c1, DOT_PREC, EXACT_EXP)
        p10 += _off(q1, g1, m1, k0, g0, m0, c1, DOT_PREC, EXACT_EXP)
        a20 += _off(k2, g2, m2, k0, g0, m0, c2, DOT_PREC, EXACT_EXP)
        p20 += _off(q2, g2, m2, k0, g0, m0, c2, DOT_PREC, EXACT_EXP)
        a21 += _off(k2, g2, m2, k1, g1, m1, c2, DOT_PREC, EXACT_EXP)
        p21 += _off(q2, g2, m2, k1, g1, m1, c2, DOT_PREC, EXACT_EXP)
        a30 += _off(k3, g3, m3, k0, g0, m0, c3, DOT_PREC, EXACT_EXP)
        p30 += _off(q3, g3, m3, k0, g0, m0, c3, DOT_PREC, EXACT_EXP)
        a31 += _off(k3, g3, m3, k1, g1, m1, c3, DOT_PREC, EXACT_EXP)
        p31 += _off(q3, g3, m3, k1, g1, m1, c3, DOT_PREC, EXACT_EXP)
        a32 += _off(k3, g3, m3, k2, g2, m2, c3, DOT_PREC, EXACT_EXP)
        p32 += _off(q3, g3, m3, k2, g2, m2, c3, DOT_PREC, EXACT_EXP)

    b0 = tl.load(BETA + r0.to(tl.int64) * HV + i_hv, mask=m0, other=0.0).to(tl.float32)[:, None]
    b1 = tl.load(BETA + r1.to(tl.int64) * HV + i_hv, mask=m1, other=0.0).to(tl.float32)[:, None]
    b2 = tl.load(BETA + r2.to(tl.int64) * HV + i_hv, mask=m2, other=0.0).to(tl.float32)[:, None]
    b3 = tl.load(BETA + r3.to(tl.int64) * HV + i_hv, mask=m3, other=0.0).to(tl.float32)[:, None]
    _store_ainv16(PQK, r0.to(tl.int64), m0, i_hv, 0, p00, HV, BT)
    _store_ainv16(PQK, r0.to(tl.int64), m0, i_hv, 16, z, HV, BT)
    _store_ainv16(PQK, r0.to(tl.int64), m0, i_hv, 32, z, HV, BT)
    _store_ainv16(PQK, r0.to(tl.int64), m0, i_hv, 48, z, HV, BT)
    _store_ainv16(PQK, r1.to(tl.int64), m1, i_hv, 0, p10, HV, BT)
    _store_ainv16(PQK, r1.to(tl.int64), m1, i_hv, 16, p11, HV, BT)
    _store_ainv16(PQK, r1.to(tl.int64), m1, i_hv, 32, z, HV, BT)
    _store_ainv16(PQK, r1.to(tl.int64), m1, i_hv, 48, z, HV, BT)
    _store_ainv16(PQK, r2.to(tl.int64), m2, i_hv, 0, p20, HV, BT)
    _store_ainv16(PQK, r2.to(tl.int64), m2, i_hv, 16, p21, HV, BT)
    _store_ainv16(PQK, r2.to(tl.int64), m2, i_hv, 32, p22, HV, BT)
    _store_ainv16(PQK, r2.to(tl.int64), m2, i_hv, 48, z, HV, BT)
    _store_ainv16(PQK, r3.to(tl.int64), m3, i_hv, 0, p30, HV, BT)
    _store_ainv16(PQK, r3.to(tl.int64), m3, i_hv, 16, p31, HV, BT)
    _store_ainv16(PQK, r3.to(tl.int64), m3, i_hv, 32, p32, HV, BT)
    _store_ainv16(PQK, r3.to(tl.int64), m3, i_hv, 48, p33, HV, BT)

    a00 = tl.where(strict, a00, 0.0) * b0
    a11 = tl.where(strict, a11, 0.0) * b1
    a22 = tl.where(strict, a22, 0.0) * b2
    a33 = tl.where(strict, a33, 0.0) * b3
    a10 = a10 * b1
    a20 = a20 * b2
    a21 = a21 * b2
    a30 = a30 * b3
    a31 = a31 * b3
    a32 = a32 * b3
    # T_ii = (I + A_ii)^-1, T_ij = -T_ii sum_{j<=m<i} A_im T_mj
    t00 = _inv16(a00, False, DOT_PREC)
    t11 = _inv16(a11, False, DOT_PREC)
    t22 = _inv16(a22, False, DOT_PREC)
    t33 = _inv16(a33, False, DOT_PREC)
    t10 = -_dot(t11, _dot(a10, t00, DOT_PREC), DOT_PREC)
    t21 = -_dot(t22, _dot(a21, t11, DOT_PREC), DOT_PREC)
    t20 = -_dot(t22, _dot(a20, t00, DOT_PREC) + _dot(a21, t10, DOT_PREC), DOT_PREC)
    t32 = -_dot(t33, _dot(a32, t22, DOT_PREC), DOT_PREC)
    t31 = -_dot(t33, _dot(a31, t11, DOT_PREC) + _dot(a32, t21, DOT_PREC), DOT_PREC)
    t30 = -_dot(t33, _dot(a30, t00, DOT_PREC) + _dot(a31, t10, DOT_PREC) + _dot(a32, t20, DOT_PREC), DOT_PREC)
    _store_ainv16(AINV, r0.to(tl.int64), m0, i_hv, 0, t00, HV, BT)
    _store_ainv16(AINV, r0.to(tl.int64), m0, i_hv, 16, z, HV, BT)
    _store_ainv16(AINV, r0.to(tl.int64), m0, i_hv, 32, z, HV, BT)
    _store_ainv16(AINV, r0.to(tl.int64), m0, i_hv, 48, z, HV, BT)
    _store_ainv16(AINV, r1.to(tl.int64), m1, i_hv, 0, t10, HV, BT)
    _store_ainv16(AINV, r1.to(tl.int64), m1, i_hv, 16, t11, HV, BT)
    _store_ainv16(AINV, r1.to(tl.int64), m1, i_hv, 32, z, HV, BT)
    _store_ainv16(AINV, r1.to(tl.int64), m1, i_hv, 48, z, HV, BT)
    _store_ainv16(AINV, r2.to(tl.int64), m2, i_hv, 0, t20, HV, BT)
    _store_ainv16(AINV, r2.to(tl.int64), m2, i_hv, 16, t21, HV, BT)
    _store_ainv16(AINV, r2.to(tl.int64), m2, i_hv, 32, t22, HV, BT)
    _store_ainv16(AINV, r2.to(tl.int64), m2, i_hv, 48, z, HV, BT)
    _store_ainv16(AINV, r3.to(tl.int64), m3, i_hv, 0, t30, HV, BT)
    _store_ainv16(AINV, r3.to(tl.int64), m3, i_hv, 16, t31, HV, BT)
    _store_ainv16(AINV, r3.to(tl.int64), m3, i_hv, 32, t32, HV, BT)
    _store_ainv16(AINV, r3.to(tl.int64), m3, i_hv, 48, t33, HV, BT)


@triton.jit
def _gated_delta_fwd_gk_wu_kernel(
    K_,
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
):
    """``W = T (beta exp(Gc) * K)``, ``U~ = T (beta * V)`` over ``[BT, BC]`` column tiles (fp32)."""
    i_s, row0, eos = _chunk_of_slot(CU, N, BT)
    if row0 >= eos:
        return
    i_hv = tl.program_id(1)
    i_h = i_hv // (HV // H)
    o_t = tl.arange(0, BT)
    rows = row0 + o_t
    m_t = rows < eos
    b_a = _ld(AINV, rows, m_t, i_hv, o_t, o_t < BT, HV, BT)
    b_beta = tl.load(BETA + rows.to(tl.int64) * HV + i_hv, mask=m_t, other=0.0).to(tl.float32)
    o_c = tl.arange(0, BC)
    for i_c in range(0, tl.cdiv(K, BC)):
        o_k = i_c * BC + o_c
        m_k = o_k < K
        m = m_t[:, None] & m_k[None, :]
        b_k = _ld(K_, rows, m_t, i_h, o_k, m_k, H, K)
        b_g = _ldg(GC, rows, m_t, i_hv, o_k, m_k, HV, K)
        b_x = b_k * _e(tl.where(m, b_g, 0.0), EXACT_EXP) * b_beta[:, None]
        _st(W, _dot(b_a, b_x, DOT_PREC), rows, m_t, i_hv, o_k, m_k, HV, K)
    for i_c in range(0, tl.cdiv(V, BC)):
        o_v = i_c * BC + o_c
        m_v = o_v < V
        b_y = _ld(V_, rows, m_t, i_hv, o_v, m_v, HV, V) * b_beta[:, None]
        _st(U, _dot(b_a, b_y, DOT_PREC), rows, m_t, i_hv, o_v, m_v, HV, V)


@triton.jit
def _gated_delta_fwd_gk_h_kernel(
    K_,
    W,
    U,
    GC,
    H0,
    HT,
    HBUF,
    VNEW,
    DHBUF,
    GH,
    CU,
    N,
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
    EXACT_EXP: tl.constexpr,
):
    """Sequential state pass per (V block, sequence, value head): stores each chunk's entering state
    (fp32) and ``U = U~ - W S0``; ``S <- exp(Gc_last) * S + (exp(Gc_last - Gc) * K)^T U``. With
    ``COMPUTE_GH`` (backward) also ``sum_v S0 * dS`` per key and V block, from the exact state."""
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
    p_state = (i_n * HV + i_hv).to(tl.int64) * K * V
    if USE_INITIAL_STATE:
        b_h = tl.load(H0 + p_state + o_kv, mask=m_kv, other=0.0).to(tl.float32)
    else:
        b_h = tl.zeros([BK, BV], dtype=tl.float32)
    o_t0 = tl.arange(0, BT)
    for i_t in range(0, n_chunks):
        row0 = bos + i_t * BT
        rows = row0 + o_t0
        m_t = rows < eos
        last = (tl.minimum(row0 + BT, eos) - 1).to(tl.int64)
        p_slot = ((slot0 + i_t).to(tl.int64) * HV + i_hv) * K * V
        tl.store(HBUF + p_slot + o_kv, b_h, mask=m_kv)
        if COMPUTE_GH:
            b_dh = tl.load(DHBUF + p_slot + o_kv, mask=m_kv, other=0.0)
            p_gh = (((slot0 + i_t).to(tl.int64) * HV + i_hv) * NG + i_v) * K + o_k
            tl.store(GH + p_gh, tl.sum(b_h * b_dh, 1), mask=m_k)
        b_w = _ld(W, rows, m_t, i_hv, o_k, m_k, HV, K)
        b_vn = _ld(U, rows, m_t, i_hv, o_v, m_v, HV, V) - _dot(b_w, b_h, DOT_PREC)
        _st(VNEW, b_vn, rows, m_t, i_hv, o_v, m_v, HV, V)
        m_tk = m_t[:, None] & m_k[None, :]
        b_g = _ldg(GC, rows, m_t, i_hv, o_k, m_k, HV, K)
        g_last = tl.load(GC + (last * HV + i_hv) * K + o_k, mask=m_k, other=0.0)
        b_kd = _ld(K_, rows, m_t, i_h, o_k, m_k, H, K) * _e(
            tl.where(m_tk, g_last[None, :] - b_g, 0.0), EXACT_EXP
        )
        b_h = b_h * _e(g_last, EXACT_EXP)[:, None] + _dot(tl.trans(b_kd), b_vn, DOT_PREC)
    if STORE_FINAL_STATE:
        tl.store(HT + p_state + o_kv, b_h, mask=m_kv)


@triton.jit
def _gated_delta_fwd_gk_o_kernel(
    Q,
    VNEW,
    HBUF,
    GC,
    PQK,
    O,
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
    EXACT_EXP: tl.constexpr,
):
    """``O = scale ((exp(Gc) * Q) S0 + P U)`` per chunk, value head and V block."""
    # Inductor passes Python floats as fp64 scalars: fp64 would promote the tiles (and feed fp64
    # operands to tl.dot); eager passes fp32, where this cast is a no-op
    scale = tl.cast(scale, tl.float32)
    i_s, row0, eos = _chunk_of_slot(CU, N, BT)
    if row0 >= eos:
        return
    i_hv = tl.program_id(1)
    i_v = tl.program_id(2)
    i_h = i_hv // (HV // H)
    o_t = tl.arange(0, BT)
    rows = row0 + o_t
    m_t = rows < eos
    o_v = i_v * BV + tl.arange(0, BV)
    m_v = o_v < V
    p_state = (i_s.to(tl.int64) * HV + i_hv) * K * V
    b_o = tl.zeros([BT, BV], dtype=tl.float32)
    for i_k in range(0, tl.cdiv(K, BK)):
        o_k = i_k * BK + tl.arange(0, BK)
        m_k = o_k < K
        b_g = _ldg(GC, rows, m_t, i_hv, o_k, m_k, HV, K)
        b_q = _ld(Q, rows, m_t, i_h, o_k, m_k, H, K)
        b_q = b_q * _e(tl.where(m_t[:, None] & m_k[None, :], b_g, 0.0), EXACT_EXP)
        b_h = tl.load(
            HBUF + p_state + o_k[:, None] * V + o_v[None, :], mask=m_k[:, None] & m_v[None, :], other=0.0
        )
        b_o += _dot(b_q, b_h, DOT_PREC)
    b_p = _ld(PQK, rows, m_t, i_hv, o_t, o_t < BT, HV, BT)
    b_o += _dot(b_p, _ld(VNEW, rows, m_t, i_hv, o_v, m_v, HV, V), DOT_PREC)
    _st(O, b_o * scale, rows, m_t, i_hv, o_v, m_v, HV, V)


# ---------------------------------------------------------------------------------------------
# backward


@triton.jit
def _gated_delta_bwd_gk_dv_local_kernel(
    PQK,
    DO,
    DU,
    CU,
    N,
    scale,
    HV: tl.constexpr,
    V: tl.constexpr,
    BT: tl.constexpr,
    BV: tl.constexpr,
    DOT_PREC: tl.constexpr,
):
    """``dU_local = scale P^T dO`` (P loaded transposed)."""
    # Inductor passes Python floats as fp64 scalars: fp64 would promote the tiles (and feed fp64
    # operands to tl.dot); eager passes fp32, where this cast is a no-op
    scale = tl.cast(scale, tl.float32)
    i_s, row0, eos = _chunk_of_slot(CU, N, BT)
    if row0 >= eos:
        return
    i_hv = tl.program_id(1)
    i_v = tl.program_id(2)
    o_t = tl.arange(0, BT)
    rows = row0 + o_t
    m_t = rows < eos
    o_v = i_v * BV + tl.arange(0, BV)
    m_v = o_v < V
    b_pt = tl.load(
        PQK + (rows.to(tl.int64)[None, :] * HV + i_hv) * BT + o_t[:, None], mask=m_t[None, :], other=0.0
    )
    b_do = _ld(DO, rows, m_t, i_hv, o_v, m_v, HV, V)
    _st(DU, _dot(b_pt, b_do, DOT_PREC) * scale, rows, m_t, i_hv, o_v, m_v, HV, V)


@triton.jit
def _gated_delta_bwd_gk_dhu_kernel(
    Q,
    K_,
    W,
    GC,
    DO,
    DUL,
    DU,
    DHT,
    DH0,
    DHBUF,
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
    DOT_PREC: tl.constexpr,
    EXACT_EXP: tl.constexpr,
):
    """Reverse state pass: stores ``dS`` per chunk (fp32) and ``dU = dU_local + (exp(Gc_last - Gc) K) dS``;
    ``dS <- exp(Gc_last) * dS + scale (exp(Gc) Q)^T dO - W^T dU``; the last one is ``dS0``."""
    # Inductor passes Python floats as fp64 scalars: fp64 would promote the tiles (and feed fp64
    # operands to tl.dot); eager passes fp32, where this cast is a no-op
    scale = tl.cast(scale, tl.float32)
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
    p_state = (i_n * HV + i_hv).to(tl.int64) * K * V
    if USE_FINAL_STATE_GRADIENT:
        b_dh = tl.load(DHT + p_state + o_kv, mask=m_kv, other=0.0).to(tl.float32)
    else:
        b_dh = tl.zeros([BK, BV], dtype=tl.float32)
    o_t0 = tl.arange(0, BT)
    for i in range(0, n_chunks):
        i_t = n_chunks - 1 - i
        row0 = bos + i_t * BT
        rows = row0 + o_t0
        m_t = rows < eos
        last = (tl.minimum(row0 + BT, eos) - 1).to(tl.int64)
        tl.store(DHBUF + ((slot0 + i_t).to(tl.int64) * HV + i_hv) * K * V + o_kv, b_dh, mask=m_kv)
        m_tk = m_t[:, None] & m_k[None, :]
        b_g = _ldg(GC, rows, m_t, i_hv, o_k, m_k, HV, K)
        g_last = tl.load(GC + (last * HV + i_hv) * K + o_k, mask=m_k, other=0.0)
        b_kd = _ld(K_, rows, m_t, i_h, o_k, m_k, H, K) * _e(
            tl.where(m_tk, g_last[None, :] - b_g, 0.0), EXACT_EXP
        )
        b_du = _ld(DUL, rows, m_t, i_hv, o_v, m_v, HV, V) + _dot(b_kd, b_dh, DOT_PREC)
        _st(DU, b_du, rows, m_t, i_hv, o_v, m_v, HV, V)
        b_qg = _ld(Q, rows, m_t, i_h, o_k, m_k, H, K) * (_e(tl.where(m_tk, b_g, 0.0), EXACT_EXP) * scale)
        b_w = _ld(W, rows, m_t, i_hv, o_k, m_k, HV, K)
        b_do = _ld(DO, rows, m_t, i_hv, o_v, m_v, HV, V)
        b_dh = (
            b_dh * _e(g_last, EXACT_EXP)[:, None]
            + _dot(tl.trans(b_qg), b_do, DOT_PREC)
            - _dot(tl.trans(b_w), b_du, DOT_PREC)
        )
    tl.store(DH0 + p_state + o_kv, b_dh, mask=m_kv)


@triton.jit
def _gated_delta_bwd_gk_wy_kernel(
    K_,
    V_,
    BETA,
    GC,
    AINV,
    HBUF,
    VNEW,
    DO,
    DU,
    DA,
    DP,
    DK,
    DGC,
    DV,
    DB,
    CU,
    N,
    scale,
    H: tl.constexpr,
    HV: tl.constexpr,
    K: tl.constexpr,
    V: tl.constexpr,
    BT: tl.constexpr,
    BC: tl.constexpr,
    BV: tl.constexpr,
    DOT_PREC: tl.constexpr,
    EXACT_EXP: tl.constexpr,
):
    """Per chunk and value head, over column tiles: ``dW = -dU S0^T``, ``dX = T^T dW`` (the WY part of
    dK and dGc, written first into DK / DGC), ``dT``, ``dA = -T^T dT T^T`` and ``dP = scale dO U^T``
    (stored ``[T, HV, BT]``, masked), ``dV = beta T^T dU`` and the WY / value part of dbeta."""
    # Inductor passes Python floats as fp64 scalars: fp64 would promote the tiles (and feed fp64
    # operands to tl.dot); eager passes fp32, where this cast is a no-op
    scale = tl.cast(scale, tl.float32)
    i_s, row0, eos = _chunk_of_slot(CU, N, BT)
    if row0 >= eos:
        return
    i_hv = tl.program_id(1)
    i_h = i_hv // (HV // H)
    o_t = tl.arange(0, BT)
    rows = row0 + o_t
    m_t = rows < eos
    all_t = o_t < BT
    p_state = (i_s.to(tl.int64) * HV + i_hv) * K * V
    b_at = tl.load(
        AINV + (rows.to(tl.int64)[None, :] * HV + i_hv) * BT + o_t[:, None], mask=m_t[None, :], other=0.0
    )
    b_beta = tl.load(BETA + rows.to(tl.int64) * HV + i_hv, mask=m_t, other=0.0).to(tl.float32)
    o_c = tl.arange(0, BC)
    b_dt = tl.zeros([BT, BT], dtype=tl.float32)
    b_db = tl.zeros([BT], dtype=tl.float32)
    for i_k in range(0, tl.cdiv(K, BC)):
        o_k = i_k * BC + o_c
        m_k = o_k < K
        m_tk = m_t[:, None] & m_k[None, :]
        b_dw = tl.zeros([BT, BC], dtype=tl.float32)
        for i_v in range(0, tl.cdiv(V, BV)):
            o_v = i_v * BV + tl.arange(0, BV)
            m_v = o_v < V
            b_du = _ld(DU, rows, m_t, i_hv, o_v, m_v, HV, V)
            b_h = tl.load(
                HBUF + p_state + o_k[:, None] * V + o_v[None, :], mask=m_k[:, None] & m_v[None, :], other=0.0
            )
            b_dw -= _dot(b_du, tl.trans(b_h), DOT_PREC)
        b_k = _ld(K_, rows, m_t, i_h, o_k, m_k, H, K)
        b_eg = _e(tl.where(m_tk, _ldg(GC, rows, m_t, i_hv, o_k, m_k, HV, K), 0.0), EXACT_EXP)
        b_keg = b_k * b_eg
        b_dt += _dot(b_dw, tl.trans(b_keg * b_beta[:, None]), DOT_PREC)
        b_dx = _dot(b_at, b_dw, DOT_PREC)
        b_dk = b_dx * b_eg * b_beta[:, None]
        _st(DK, b_dk, rows, m_t, i_hv, o_k, m_k, HV, K)
        _st(DGC, b_dk * b_k, rows, m_t, i_hv, o_k, m_k, HV, K)
        b_db += tl.sum(b_dx * b_keg, 1)
    b_dp = tl.zeros([BT, BT], dtype=tl.float32)
    for i_v in range(0, tl.cdiv(V, BV)):
        o_v = i_v * BV + tl.arange(0, BV)
        m_v = o_v < V
        b_du = _ld(DU, rows, m_t, i_hv, o_v, m_v, HV, V)
        b_v = _ld(V_, rows, m_t, i_hv, o_v, m_v, HV, V)
        b_dt += _dot(b_du, tl.trans(b_v * b_beta[:, None]), DOT_PREC)
        b_tdu = _dot(b_at, b_du, DOT_PREC)
        _st(DV, b_tdu * b_beta[:, None], rows, m_t, i_hv, o_v, m_v, HV, V)
        b_db += tl.sum(b_tdu * b_v, 1)
        b_do = _ld(DO, rows, m_t, i_hv, o_v, m_v, HV, V)
        b_vn = _ld(VNEW, rows, m_t, i_hv, o_v, m_v, HV, V)
        b_dp += _dot(b_do, tl.trans(b_vn), DOT_PREC)
    b_da = -_dot(_dot(b_at, b_dt, DOT_PREC), b_at, DOT_PREC)
    strict = (o_t[:, None] > o_t[None, :]) & m_t[:, None]
    _st(DA, tl.where(strict, b_da, 0.0), rows, m_t, i_hv, o_t, all_t, HV, BT)
    causal = (o_t[:, None] >= o_t[None, :]) & m_t[:, None]
    _st(DP, tl.where(causal, b_dp * scale, 0.0), rows, m_t, i_hv, o_t, all_t, HV, BT)
    tl.store(DB + rows.to(tl.int64) * HV + i_hv, b_db, mask=m_t)


@triton.jit
def _gated_delta_bwd_gk_dqk_kernel(
    Q,
    K_,
    BETA,
    GC,
    HBUF,
    DHBUF,
    VNEW,
    DO,
    GH,
    DA,
    DP,
    DQ,
    DK,
    DGC,
    DBP,
    DGL,
    CU,
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
    EXACT_EXP: tl.constexpr,
):
    """Per chunk, value head and key block of ``BK`` columns. First, for all the chunk's rows at once: the
    state terms ``dQ = scale exp(Gc) (dO S0^T)``, ``dK += exp(Gc_last - Gc) (U dS^T)`` and their dGc terms,
    stored to DQ / DK / DGC (DK / DGC: added to the WY parts there). Then by 16-row blocks ``i``, each reading
    its rows back: the row sums ``sum_{s<=t} M_ts k_s exp(Gc_t - Gc_s)`` (M = dP, dA) and the column sums
    ``sum_{t>=s} M_ts y_t exp(Gc_t - Gc_s)`` (y = q for dP, beta k for dA) split as in the forward, and the
    matching dGc terms. The last row's gate terms go to DGL per chunk, the A part of dbeta to DBP (one
    partial per key block).

    The state terms as ``[BT, BV] x [BV, BK]`` products with S0 / dS read once per program (session 38; until
    then per 16-row block, ``[16, BV]`` products and S0 / dS read four times): backward 14.80 -> 14.60 ms on
    H16 8 x 4096 strong gk (H200, ``benchmarks/gk_diag_check.py``, results 2026-11-27-s38-h200-round4)."""
    # Inductor passes Python floats as fp64 scalars: fp64 would promote the tiles (and feed fp64
    # operands to tl.dot); eager passes fp32, where this cast is a no-op
    scale = tl.cast(scale, tl.float32)
    # key block fastest (flattened with the chunk slot): the NKB programs of one chunk read the same v_new / dO
    # tiles, from L2 when they run together (as bwd_dqkwg since session 18)
    i_s, row0, eos = _chunk_of(CU, N, BT, tl.program_id(0) // NKB)
    if row0 >= eos:
        return
    i_hv = tl.program_id(1)
    i_kb = tl.program_id(0) % NKB
    i_h = i_hv // (HV // H)
    o_k = i_kb * BK + tl.arange(0, BK)
    m_k = o_k < K
    p_state = (i_s.to(tl.int64) * HV + i_hv) * K * V
    last = (tl.minimum(row0 + BT, eos) - 1).to(tl.int64)
    g_last = tl.load(GC + (last * HV + i_hv) * K + o_k, mask=m_k, other=0.0)
    o_g = tl.arange(0, BG)
    b_gh = tl.load(
        GH + ((i_s.to(tl.int64) * HV + i_hv) * NG + o_g[:, None]) * K + o_k[None, :],
        mask=(o_g < NG)[:, None] & m_k[None, :],
        other=0.0,
    )
    b_dgl = _e(g_last, EXACT_EXP) * tl.sum(b_gh, 0)
    # the state terms of all rows
    r_c = row0 + tl.arange(0, BT)
    m_c = r_c < eos
    m_ck = m_c[:, None] & m_k[None, :]
    b_dqg = tl.zeros([BT, BK], dtype=tl.float32)
    b_dkd = tl.zeros([BT, BK], dtype=tl.float32)
    for i_v in range(0, tl.cdiv(V, BV)):
        o_v = i_v * BV + tl.arange(0, BV)
        m_v = o_v < V
        m_kv = m_k[:, None] & m_v[None, :]
        b_h = tl.load(HBUF + p_state + o_k[:, None] * V + o_v[None, :], mask=m_kv, other=0.0)
        b_dh = tl.load(DHBUF + p_state + o_k[:, None] * V + o_v[None, :], mask=m_kv, other=0.0)
        b_dqg += _dot(_ld(DO, r_c, m_c, i_hv, o_v, m_v, HV, V), tl.trans(b_h), DOT_PREC)
        b_dkd += _dot(_ld(VNEW, r_c, m_c, i_hv, o_v, m_v, HV, V), tl.trans(b_dh), DOT_PREC)
    q_c = _ld(Q, r_c, m_c, i_h, o_k, m_k, H, K)
    k_c = _ld(K_, r_c, m_c, i_h, o_k, m_k, H, K)
    g_c = _ldg(GC, r_c, m_c, i_hv, o_k, m_k, HV, K)
    b_dq = b_dqg * (_e(tl.where(m_ck, g_c, 0.0), EXACT_EXP) * scale)
    b_dks = b_dkd * tl.where(m_ck, _e(tl.where(m_ck, g_last[None, :] - g_c, 0.0), EXACT_EXP), 0.0)
    # the last row's factor exp(Gc_last - Gc_last) = 1 does not depend on the gates: leaving its two
    # cancelling gate terms out makes them vanish exactly (a length-1 sequence without an initial state has
    # a gate gradient of exactly 0, not a rounding residue)
    b_gks = tl.where((r_c == last)[:, None], 0.0, k_c * b_dks)
    b_dgl += tl.sum(b_gks, 0)
    _st(DQ, b_dq, r_c, m_c, i_hv, o_k, m_k, HV, K)
    _st(DK, b_dks + _ld(DK, r_c, m_c, i_hv, o_k, m_k, HV, K), r_c, m_c, i_hv, o_k, m_k, HV, K)
    b_dgc = q_c * b_dq - b_gks + _ld(DGC, r_c, m_c, i_hv, o_k, m_k, HV, K)
    _st(DGC, b_dgc, r_c, m_c, i_hv, o_k, m_k, HV, K)
    # the blocks below read these rows back, also rows that other threads stored
    tl.debug_barrier()
    for i in tl.static_range(4):
        r_i, m_i = _rows(row0, i, eos)
        m_ik = m_i[:, None] & m_k[None, :]
        q_i = _ld(Q, r_i, m_i, i_h, o_k, m_k, H, K)
        k_i = _ld(K_, r_i, m_i, i_h, o_k, m_k, H, K)
        g_i = _ldg(GC, r_i, m_i, i_hv, o_k, m_k, HV, K)
        beta_i = tl.load(BETA + r_i.to(tl.int64) * HV + i_hv, mask=m_i, other=0.0).to(tl.float32)
        b_dq = _ld(DQ, r_i, m_i, i_hv, o_k, m_k, HV, K)
        b_dks = _ld(DK, r_i, m_i, i_hv, o_k, m_k, HV, K)
        b_dgc = _ld(DGC, r_i, m_i, i_hv, o_k, m_k, HV, K)
        # diagonal block: [t, s, d], strictly below the diagonal; the s == t terms of P (decay 1)
        # enter dq / dk only, not dGc, where their row and column parts cancel (dA is strictly lower)
        o16 = tl.arange(0, 16)
        dp_tt = tl.load(DP + (r_i.to(tl.int64) * HV + i_hv) * BT + i * 16 + o16, mask=m_i, other=0.0)
        b_rp, b_ra, b_cp, b_ca = _diag_bwd(
            GC,
            DP,
            DA,
            q_i,
            k_i,
            g_i,
            beta_i,
            m_i,
            row0,
            i,
            eos,
            i_hv,
            o_k,
            m_k,
            HV,
            K,
            BT,
            DOT_PREC,
            EXACT_EXP,
        )
        # row sums over earlier blocks j < i, reference c_i (the row before block i)
        if i > 0:
            c_i = _ref(GC, row0, i, eos, i_hv, o_k, m_k, HV, K)
            acc_p = tl.zeros([16, BK], dtype=tl.float32)
            acc_a = tl.zeros([16, BK], dtype=tl.float32)
            for j in tl.static_range(i):
                r_j, m_j = _rows(row0, j, eos)
                k_j = _ld(K_, r_j, m_j, i_h, o_k, m_k, H, K)
                g_j = _ldg(GC, r_j, m_j, i_hv, o_k, m_k, HV, K)
                k_j = k_j * _e(tl.where(m_j[:, None], c_i[None, :] - g_j, 0.0), EXACT_EXP)
                acc_p += _dot(_blk(DP, row0, i, j, eos, i_hv, HV, BT), k_j, DOT_PREC)
                acc_a += _dot(_blk(DA, row0, i, j, eos, i_hv, HV, BT), k_j, DOT_PREC)
            f_i = _e(tl.where(m_ik, g_i - c_i[None, :], 0.0), EXACT_EXP)
            b_rp += acc_p * f_i
            b_ra += acc_a * f_i
        # column sums over later blocks a > i, reference c_{i+1} (the last row of block i)
        if i < 3:
            c_n = _ref(GC, row0, i + 1, eos, i_hv, o_k, m_k, HV, K)
            acc_p = tl.zeros([16, BK], dtype=tl.float32)
            acc_a = tl.zeros([16, BK], dtype=tl.float32)
            for a in tl.static_range(i + 1, 4):
                r_a, m_a = _rows(row0, a, eos)
                q_a = _ld(Q, r_a, m_a, i_h, o_k, m_k, H, K)
                k_a = _ld(K_, r_a, m_a, i_h, o_k, m_k, H, K)
                g_a = _ldg(GC, r_a, m_a, i_hv, o_k, m_k, HV, K)
                beta_a = tl.load(BETA + r_a.to(tl.int64) * HV + i_hv, mask=m_a, other=0.0).to(tl.float32)
                f_a = _e(tl.where(m_a[:, None], g_a - c_n[None, :], 0.0), EXACT_EXP)
                acc_p += _dot(_blk_t(DP, row0, a, i, eos, i_hv, HV, BT), q_a * f_a, DOT_PREC)
                acc_a += _dot(
                    _blk_t(DA, row0, a, i, eos, i_hv, HV, BT), k_a * f_a * beta_a[:, None], DOT_PREC
                )
            f_n = _e(tl.where(m_ik, c_n[None, :] - g_i, 0.0), EXACT_EXP)
            b_cp += acc_p * f_n
            b_ca += acc_a * f_n
        b_dq += b_rp + dp_tt[:, None] * k_i
        b_dbp = tl.sum(b_ra * k_i, 1)
        b_ra = b_ra * beta_i[:, None]
        b_dk = b_dks + b_cp + dp_tt[:, None] * q_i + b_ra + b_ca
        b_dgc += q_i * b_rp - k_i * b_cp + k_i * b_ra - k_i * b_ca
        _st(DQ, b_dq, r_i, m_i, i_hv, o_k, m_k, HV, K)
        _st(DK, b_dk, r_i, m_i, i_hv, o_k, m_k, HV, K)
        _st(DGC, b_dgc, r_i, m_i, i_hv, o_k, m_k, HV, K)
        tl.store(DBP + i_kb * TH + r_i.to(tl.int64) * HV + i_hv, b_dbp, mask=m_i)
    tl.store(DGL + (i_s.to(tl.int64) * HV + i_hv) * K + o_k, b_dgl, mask=m_k)


@triton.jit
def _gated_delta_bwd_gk_gate_kernel(
    DGC,
    DGL,
    DB,
    DBP,
    DGK,
    DG,
    DBOUT,
    CU,
    N,
    TH,
    HV: tl.constexpr,
    K: tl.constexpr,
    BT: tl.constexpr,
    BK: tl.constexpr,
    NKB: tl.constexpr,
):
    """``dgk`` = reverse cumsum of ``dGc`` in the chunk (the last row's terms added first),
    ``dg = sum_d dgk``,
    ``dbeta`` = the WY / value part plus the key blocks' A parts."""
    i_s, row0, eos = _chunk_of_slot(CU, N, BT)
    if row0 >= eos:
        return
    i_hv = tl.program_id(1)
    o_t = tl.arange(0, BT)
    rows = row0 + o_t
    m_t = rows < eos
    o_k = tl.arange(0, BK)
    m_k = o_k < K
    last = tl.minimum(row0 + BT, eos) - 1
    b_d = _ld(DGC, rows, m_t, i_hv, o_k, m_k, HV, K)
    b_l = tl.load(DGL + (i_s.to(tl.int64) * HV + i_hv) * K + o_k, mask=m_k, other=0.0)
    b_d = tl.where((rows == last)[:, None], b_d + b_l[None, :], b_d)
    b_d = tl.where(m_t[:, None] & m_k[None, :], b_d, 0.0)
    b_d = tl.sum(b_d, 0)[None, :] - tl.cumsum(b_d, 0) + b_d
    _st(DGK, b_d, rows, m_t, i_hv, o_k, m_k, HV, K)
    tl.store(DG + rows.to(tl.int64) * HV + i_hv, tl.sum(b_d, 1), mask=m_t)
    b_b = tl.load(DB + rows.to(tl.int64) * HV + i_hv, mask=m_t, other=0.0)
    for i_kb in tl.static_range(NKB):
        b_b += tl.load(DBP + i_kb * TH + rows.to(tl.int64) * HV + i_hv, mask=m_t, other=0.0)
    tl.store(DBOUT + rows.to(tl.int64) * HV + i_hv, b_b, mask=m_t)


# ---------------------------------------------------------------------------------------------
# launchers


def gate_dtype(dtype) -> torch.dtype:
    """Storage dtype of the cumulative gates ``Gc``. Chunk sums reach hundreds, where an fp32 ulp is
    ~1.5e-5: rounding each ``Gc`` to fp32 puts that absolute error into every ``Gc_t - Gc_s`` and
    so a relative 1.5e-5 into neighbouring tokens' decays, ~20x the error of the fp32 token loop
    (seen on the strong-gate test). fp32 inputs keep ``Gc`` in fp64 (differences are exact to
    fp32); for fp16/bf16 inputs that error is far below the inputs' own rounding."""
    return torch.float64 if dtype == torch.float32 else torch.float32


def _prepare_gk(q, k, v, g, gk, beta, cu, dtype, kept=None):
    """``(gc [T, HV, K], T^-1 [T, HV, BT], P [T, HV, BT], w [T, HV, K], u~ [T, HV, V])``, all fp32.
    ``dtype``: the caller's input dtype (q/k may come normalised in fp32), which picks the precisions.
    ``kept``: the forward's ``(T^-1, P)`` (``chunk_fwd_gk(keep=True)``): the kkt launch is skipped."""
    t, h, dk = k.shape
    hv, dv = v.shape[1], v.shape[2]
    n = cu.shape[0] - 1
    ns = num_slots(t, n)
    dev = k.device
    f32 = torch.float32
    gc = new_empty((t, hv, dk), dtype=gate_dtype(dtype), device=dev)
    if kept is None:
        ainv = new_empty((t, hv, BT), dtype=f32, device=dev)
        pqk = new_empty((t, hv, BT), dtype=f32, device=dev)
    else:
        ainv, pqk = kept
    w = new_empty((t, hv, dk), dtype=f32, device=dev)
    u = new_empty((t, hv, dv), dtype=f32, device=dev)
    if ns > 0:
        prec = dot_precision(dtype)
        exact = exact_exp(dtype)
        launch(
            _gated_delta_fwd_gk_cumsum_kernel,
            (ns, hv),
            g,
            gk,
            gc,
            cu,
            n,
            HV=hv,
            K=dk,
            BT=BT,
            BK=block_k(dk),
            num_warps=8,
        )
        if kept is None:
            launch(_gated_delta_fwd_gk_kkt_kernel, (ns, hv),
                q, k, gc, beta, ainv, pqk, cu, n,
                H=h, HV=hv, K=dk, BT=BT, BKB=min(KKT_BK, block_k(dk)), DOT_PREC=prec, EXACT_EXP=exact,
                num_warps=KKT_WARPS,
            )  # fmt: skip
        launch(_gated_delta_fwd_gk_wu_kernel, (ns, hv),
            k, v, beta, gc, ainv, w, u, cu, n,
            H=h, HV=hv, K=dk, V=dv, BT=BT, BC=64, DOT_PREC=prec, EXACT_EXP=exact, num_warps=WARPS,
        )  # fmt: skip
    return gc, ainv, pqk, w, u


def _state_pass_gk(k, w, u, gc, initial_state, cu, dtype, *, store_final: bool, dhbuf=None):
    t, h, dk = k.shape
    hv, dv = u.shape[1], u.shape[2]
    n = cu.shape[0] - 1
    ns = num_slots(t, n)
    dev = k.device
    bv = BV_SEQ
    ng = triton.cdiv(dv, bv)
    hbuf = new_empty((ns, hv, dk, dv), dtype=torch.float32, device=dev)
    gh = new_empty((ns, hv, ng, dk) if dhbuf is not None else (0,), dtype=torch.float32, device=dev)
    vnew = new_empty((t, hv, dv), dtype=torch.float32, device=dev)
    final = new_empty((n, hv, dk, dv) if store_final else (0,), dtype=torch.float32, device=dev)
    if n > 0:
        launch(_gated_delta_fwd_gk_h_kernel, (ng, n * hv),
            k, w, u, gc,
            initial_state if initial_state is not None else gc,
            final, hbuf, vnew,
            dhbuf if dhbuf is not None else gc,
            gh, cu, n,
            H=h, HV=hv, K=dk, V=dv, BT=BT, BK=block_k(dk), BV=bv, NG=ng,
            USE_INITIAL_STATE=initial_state is not None, STORE_FINAL_STATE=store_final,
            COMPUTE_GH=dhbuf is not None, DOT_PREC=dot_precision(dtype), EXACT_EXP=exact_exp(dtype),
            num_warps=WARPS, num_stages=_seq_stages(dk, dot_precision(dtype)),
        )  # fmt: skip
    return hbuf, vnew, final, gh


def _seq_stages(dk: int, prec: str) -> int:
    # shared memory of h / dhu compiled for sm_90 (Triton 3.9, BV=32): K=128 two stages 148-206 KB;
    # K=256 two stages 280-404 KB (over the 227 KB limit), one stage 74-148 KB. Split-tf32 products
    # (fp16's default "tf32x3") keep more operand copies: dhu at fp16 K=128 needed 242 KB at two stages on
    # the H200 (OutOfResources for every fp16 batch with gk at K=128, session 13), so one stage there.
    if dk > 128 or (dk > 64 and prec == "tf32x3"):
        return 1
    return 2


def _bv_par(dv: int) -> int:
    return 128 if dv > 64 else 64


def chunk_fwd_gk(
    q, k, v, g, gk, beta, initial_state, cu, scale: float, dtype: torch.dtype, keep: bool = False
):
    """Forward with per-key gates on prepared inputs (l2norm applied, contiguous). ``dtype`` is the
    caller's input dtype; q and k may be in it or in fp32 (normalised without rounding).

    Shapes: q, k ``[T, H, K]``; v ``[T, HV, V]``; g, beta ``[T, HV]``; gk ``[T, HV, K]``;
    initial_state ``[N, HV, K, V]`` fp32 or None.
    Returns ``(o [T, HV, V] v.dtype, final [N, HV, K, V] fp32)``; with ``keep`` also the kkt kernel's
    ``(T^-1, P)`` (``[T, HV, BT]`` fp32 each) for ``chunk_bwd_gk(kept=...)``.
    """
    t, h, dk = q.shape
    hv, dv = v.shape[1], v.shape[2]
    n = cu.shape[0] - 1
    ns = num_slots(t, n)
    gc, ainv, pqk, w, u = _prepare_gk(q, k, v, g, gk, beta, cu, dtype)
    if not keep:
        del ainv
    hbuf, vnew, final, _ = _state_pass_gk(k, w, u, gc, initial_state, cu, dtype, store_final=True)
    o = new_empty((t, hv, dv), dtype=v.dtype, device=v.device)
    if ns > 0:
        bv = _bv_par(dv)
        launch(_gated_delta_fwd_gk_o_kernel, (ns, hv, triton.cdiv(dv, bv)),
            q, vnew, hbuf, gc, pqk, o, cu, n, scale,
            H=h, HV=hv, K=dk, V=dv, BT=BT, BK=min(64, block_k(dk)), BV=bv,
            DOT_PREC=dot_precision(dtype), EXACT_EXP=exact_exp(dtype), num_warps=8,
        )  # fmt: skip
    return (o, final, ainv, pqk) if keep else (o, final)


def chunk_bwd_gk(
    q, k, v, g, gk, beta, initial_state, cu, scale: float, do, dht, dtype: torch.dtype, kept=None
):  # fmt: skip
    """Gradients with per-key gates on prepared inputs (l2norm applied, contiguous; ``dtype`` as in
    :func:`chunk_fwd_gk`). ``kept``: the forward's ``(T^-1, P)`` (``chunk_fwd_gk(keep=True)``, bitwise what
    the recompute gives): no kkt launch (H200, session 38: 2.5 of the 14.6 ms backward on H16 8 x 4096).

    Returns ``(dq [T, H, K] fp32, dk [T, H, K] fp32, dv [T, HV, V] v.dtype, dg [T, HV] fp32,
    dbeta [T, HV] fp32, dgk [T, HV, K] fp32, dh0 [N, HV, K, V] fp32)``.
    """
    t, h, dk_ = q.shape
    hv, dv_ = v.shape[1], v.shape[2]
    n = cu.shape[0] - 1
    ns = num_slots(t, n)
    dev = q.device
    f32 = torch.float32
    bk = block_k(dk_)
    prec = dot_precision(dtype)
    exact = exact_exp(dtype)
    gc, ainv, pqk, w, u = _prepare_gk(q, k, v, g, gk, beta, cu, dtype, kept)

    du_local = new_empty((t, hv, dv_), dtype=f32, device=dev)
    du = new_empty((t, hv, dv_), dtype=f32, device=dev)
    dhbuf = new_empty((ns, hv, dk_, dv_), dtype=f32, device=dev)
    dh0 = new_empty((n, hv, dk_, dv_), dtype=f32, device=dev)
    bvp = _bv_par(dv_)
    if ns > 0:
        launch(
            _gated_delta_bwd_gk_dv_local_kernel,
            (ns, hv, triton.cdiv(dv_, bvp)),
            pqk,
            do,
            du_local,
            cu,
            n,
            scale,
            HV=hv,
            V=dv_,
            BT=BT,
            BV=bvp,
            DOT_PREC=prec,
            num_warps=8,
        )
    if n > 0:
        bv = BV_SEQ
        launch(_gated_delta_bwd_gk_dhu_kernel, (triton.cdiv(dv_, bv), n * hv),
            q, k, w, gc, do, du_local, du,
            dht if dht is not None else gc,
            dh0, dhbuf, cu, n, scale,
            H=h, HV=hv, K=dk_, V=dv_, BT=BT, BK=bk, BV=bv,
            USE_FINAL_STATE_GRADIENT=dht is not None, DOT_PREC=prec, EXACT_EXP=exact,
            num_warps=WARPS, num_stages=_seq_stages(dk_, prec),
        )  # fmt: skip
    del du_local
    hbuf, vnew, _, gh = _state_pass_gk(k, w, u, gc, initial_state, cu, dtype, store_final=False, dhbuf=dhbuf)
    del w, u
    da = new_empty((t, hv, BT), dtype=f32, device=dev)
    dp = new_empty((t, hv, BT), dtype=f32, device=dev)
    dkh = new_empty((t, hv, dk_), dtype=f32, device=dev)
    dgc = new_empty((t, hv, dk_), dtype=f32, device=dev)
    dv = new_empty((t, hv, dv_), dtype=v.dtype, device=dev)
    db0 = new_empty((t, hv), dtype=f32, device=dev)
    if ns > 0:
        launch(_gated_delta_bwd_gk_wy_kernel, (ns, hv),
            k, v, beta, gc, ainv, hbuf, vnew, do, du, da, dp, dkh, dgc, dv, db0, cu, n, scale,
            H=h, HV=hv, K=dk_, V=dv_, BT=BT, BC=max(WY_BC_MIN, min(32, bk)), BV=WY_BV, DOT_PREC=prec,
            EXACT_EXP=exact, num_warps=WY_WARPS,
        )  # fmt: skip
    del ainv, pqk, du
    bkb = min(DQK_BK, bk)
    nkb = triton.cdiv(dk_, bkb)
    dqh = new_empty((t, hv, dk_), dtype=f32, device=dev)
    dbp = new_empty((nkb, t, hv), dtype=f32, device=dev)
    dgl = new_empty((ns, hv, dk_), dtype=f32, device=dev)
    if ns > 0:
        launch(_gated_delta_bwd_gk_dqk_kernel, (ns * nkb, hv),
            q, k, beta, gc, hbuf, dhbuf, vnew, do, gh, da, dp, dqh, dkh, dgc, dbp, dgl, cu, n, t * hv, scale,
            H=h, HV=hv, K=dk_, V=dv_, BT=BT, BK=bkb, BV=64, NG=gh.shape[2], NKB=nkb,
            BG=max(2, triton.next_power_of_2(gh.shape[2])), DOT_PREC=prec, EXACT_EXP=exact,
            num_warps=DQK_WARPS,
        )  # fmt: skip
    del hbuf, dhbuf, vnew, gh, da, dp
    dgk = new_empty((t, hv, dk_), dtype=f32, device=dev)
    dg = new_empty((t, hv), dtype=f32, device=dev)
    db = new_empty((t, hv), dtype=f32, device=dev)
    if ns > 0:
        launch(
            _gated_delta_bwd_gk_gate_kernel,
            (ns, hv),
            dgc,
            dgl,
            db0,
            dbp,
            dgk,
            dg,
            db,
            cu,
            n,
            t * hv,
            HV=hv,
            K=dk_,
            BT=BT,
            BK=bk,
            NKB=nkb,
            num_warps=8,
        )
    grp = hv // h
    if grp > 1:
        dqh = dqh.view(t, h, grp, dk_).sum(2)
        dkh = dkh.view(t, h, grp, dk_).sum(2)
    return dqh, dkh, dv, dg, db, dgk, dh0
