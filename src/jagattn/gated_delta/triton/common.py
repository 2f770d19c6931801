"""Pieces shared by the gated delta kernels: the varlen chunk schedule and the 16x16 inverse.

Varlen schedule. Chunks of ``BT = 64`` rows never cross sequences; the last chunk of a sequence
may be partial. Chunk ``i`` of sequence ``n`` lives in *slot* ``cu[n] // BT + n + i``: sequence
``n`` needs ``cdiv(len_n, BT)`` slots and owns ``cu[n+1] // BT - cu[n] // BT + 1 >= cdiv(len_n, BT)``
of them, so ranges never overlap and ``T // BT + N`` slots cover every chunk. Per-chunk buffers
(states ``h``, ``dh``) are indexed by slot, and chunk-parallel kernels launch one program per slot
and find their sequence by a binary search over ``cu_seqlens``: no host sync, and at most ``N`` idle
programs per head. The backward's WY kernel reads a chunk table instead (``chunk_table``: the same
search, done once per backward by one small launch), which spares its program start the search's
dependent loads.

Miscompile guard (Triton >= 3.4 on Hopper): a ``tl.trans`` of a tensor that came out of a
``tl.dot`` and then feeds another ``tl.dot`` is miscompiled (the transposed MMA-layout operand;
flash-linear-attention issue 640). The kernels never do that: where both ``M`` and ``M^T`` of a
computed matrix are needed, ``M^T`` is computed by its own dot with the operands swapped, and
``tl.trans`` is applied only to tensors loaded from memory (or elementwise functions of them).
"""

from __future__ import annotations

import functools
import os
import warnings

import triton
import triton.language as tl

from ..._core.env import env_choice
from ..._core.launch import launch

BT = 64  # chunk size (rows); the WY inverse is built from 4 blocks of 16


def num_slots(total_rows: int, num_seqs: int) -> int:
    """Grid size / per-chunk buffer length for the slot schedule in the module docstring."""
    return total_rows // BT + num_seqs


@triton.jit
def _seq_of_slot(CU, slot, N, BT: tl.constexpr):
    """(sequence n, chunk index within n) owning ``slot``; the chunk may lie past n's end."""
    lo = slot * 0
    hi = lo + N
    while hi - lo > 1:
        mid = (lo + hi) // 2
        start = tl.load(CU + mid).to(tl.int32) // BT + mid
        go_right = start <= slot
        lo = tl.where(go_right, mid, lo)
        hi = tl.where(go_right, hi, mid)
    i_t = slot - (tl.load(CU + lo).to(tl.int32) // BT + lo)
    return lo, i_t


@triton.jit
def _chunk_of(CU, N, BT: tl.constexpr, i_s):
    """``(i_s, first row, end of its sequence)`` of chunk slot ``i_s`` (the first row may lie past the end)."""
    i_n, i_t = _seq_of_slot(CU, i_s, N, BT)
    bos = tl.load(CU + i_n).to(tl.int32)
    eos = tl.load(CU + i_n + 1).to(tl.int32)
    return i_s, bos + i_t * BT, eos


@triton.jit
def _chunk_of_slot(CU, N, BT: tl.constexpr):
    """``_chunk_of`` for the slot of ``program_id(0)`` (grids with one program per chunk on axis 0)."""
    return _chunk_of(CU, N, BT, tl.program_id(0))


@triton.jit
def _chunk_table_kernel(CU, TAB, N, NS, BT: tl.constexpr, BLOCK: tl.constexpr):
    """``TAB[2 s], TAB[2 s + 1] = (first row, end of its sequence)`` of every slot ``s < NS`` (``_chunk_of``'s
    values, int32): the binary search of ``_seq_of_slot`` for a block of slots at once."""
    slot = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = slot < NS
    lo = slot * 0
    hi = tl.where(m, lo + N, lo + 1)  # (slots past NS: done at once)
    # lo < mid < hi where hi - lo > 1; elsewhere mid == lo, which stays (start(lo) <= slot)
    while tl.max(hi - lo, 0) > 1:
        mid = (lo + hi) // 2
        start = tl.load(CU + mid, mask=m, other=0).to(tl.int32) // BT + mid
        go_right = start <= slot
        lo = tl.where(go_right, mid, lo)
        hi = tl.where(go_right, hi, mid)
    bos = tl.load(CU + lo, mask=m, other=0).to(tl.int32)
    eos = tl.load(CU + lo + 1, mask=m, other=0).to(tl.int32)
    row0 = bos + (slot - (bos // BT + lo)) * BT
    tl.store(TAB + 2 * slot, row0, mask=m)
    tl.store(TAB + 2 * slot + 1, eos, mask=m)


@triton.jit
def _chunk_of_tab(TAB, i_s):
    """``_chunk_of`` of slot ``i_s`` from a chunk table (``chunk_table``): two independent loads instead of the
    search's ``log2 N`` dependent ones at the program's start."""
    return i_s, tl.load(TAB + 2 * i_s), tl.load(TAB + 2 * i_s + 1)


def chunk_table(cu, ns: int):
    """``[2 ns]`` int32: per slot its first row and the end of its sequence, by one small launch on ``cu``'s device
    (no host sync). For the kernels whose program start waits on the search (``_chunk_of_tab``)."""
    import torch

    from ..._core.alloc import new_empty

    tab = new_empty((2 * ns,), dtype=torch.int32, device=cu.device)
    n = cu.shape[0] - 1
    if ns > 0:
        block = 256
        launch(_chunk_table_kernel, (triton.cdiv(ns, block),), cu, tab, n, ns, BT=BT, BLOCK=block)
    return tab


@triton.jit
def _inv_unit_lower16(a):
    """``(I + a)^-1`` for a strictly lower-triangular ``[16, 16]`` fp32 block, by forward substitution.

    Row ``i`` of the inverse is ``e_i - sum_{j<i} a[i, j] X[j, :]``; rows ``< i`` are final when
    row ``i`` is formed.
    """
    o = tl.arange(0, 16)
    x = tl.where(o[:, None] == o[None, :], 1.0, 0.0)
    for i in tl.static_range(1, 16):
        a_i = tl.sum(tl.where(o[:, None] == i, a, 0.0), 0)  # row i of a, indexed by column j
        x_i = tl.sum(a_i[:, None] * x, 0)  # sum_j a[i, j] x[j, :]
        x = tl.where(o[:, None] == i, x - x_i[None, :], x)
    return x


@triton.jit
def _inv_unit_lower16_pow(a, DOT_PREC: tl.constexpr):
    """``(I + a)^-1`` for a strictly lower-triangular ``[16, 16]`` fp32 block by four tensor-core
    products: ``a^16 = 0``, so ``(I + a)(I - a)(I + a^2)(I + a^4)(I + a^8) = I``. No cross-thread
    reductions (forward substitution needs two per row)."""
    o = tl.arange(0, 16)
    eye = tl.where(o[:, None] == o[None, :], 1.0, 0.0)
    p = tl.dot(a, a, input_precision=DOT_PREC)
    x = tl.dot(eye - a, eye + p, input_precision=DOT_PREC)
    p = tl.dot(p, p, input_precision=DOT_PREC)
    x = tl.dot(x, eye + p, input_precision=DOT_PREC)
    p = tl.dot(p, p, input_precision=DOT_PREC)
    return tl.dot(x, eye + p, input_precision=DOT_PREC)


@triton.jit
def _inv16(a, INV_POW: tl.constexpr, DOT_PREC: tl.constexpr):
    if INV_POW:
        return _inv_unit_lower16_pow(a, DOT_PREC)
    else:
        return _inv_unit_lower16(a)


@triton.jit
def _exp(x, EXACT: tl.constexpr):
    """``exp(x)``. ``tl.exp`` computes ``exp2(x * log2(e))``: the rounding of that product costs
    ``|x|`` ulps, and chunk-local gate sums reach tens, ~1e-6 relative (seen on H200 as fp32 dk
    errors past the tolerance rule). ``EXACT`` (fp32 inputs) reduces first: ``x = n ln2 + r`` with
    ``|r| <= ln2/2`` (two-part ln2, so ``n * ln2_hi`` is exact), ``exp(x) = 2^n exp(r)``."""
    if EXACT:
        n = tl.floor(x * 1.4426950408889634 + 0.5)
        r = (x - n * 0.693145751953125) - n * 1.4286068203094173e-06
        return tl.exp2(n) * tl.exp(r)
    else:
        return tl.exp(x)


@triton.jit
def _c(x, dt, DOT_PREC: tl.constexpr, KEEP: tl.constexpr = False):
    """A dot operand: in the input dtype ``dt`` for bf16 inputs (tensor cores), fp32 when products
    are exact (fp16/fp32 inputs) so no rounding is added that the reference run does not have. The
    opt-in ``tf32x3`` (``JAGATTN_GD_BF16_DOT``) keeps fp32 too, on split-tf32 tensor-core products;
    ``KEEP`` (``keep_fp32``) keeps fp32 for a bf16 kernel's tf32 products (a bf16 value converts
    exactly, an fp32 one keeps 10 mantissa bits instead of 7)."""
    if DOT_PREC == "ieee" or DOT_PREC == "tf32x3" or KEEP:
        return x.to(tl.float32)
    else:
        return x.to(dt)


@triton.jit
def _pow2_scale(m):
    """``(1 / p, p)`` for a tensor ``m`` of group maxima of ``|x|``: ``p = 2^floor(log2 m)``, so ``x / p`` lies in
    (-2, 2), where fp16 keeps 11 significant bits, and both the division and the later ``* p`` are exact (no fp16
    overflow or underflow whatever the magnitude). ``p`` = 1 for a group of zeros or subnormals, a maximum of 2^126
    and up (that would overflow fp16 loudly: inf), and NaN / inf groups (they stay so)."""
    bits = m.to(tl.int32, bitcast=True) & 0x7F800000
    bits = tl.where((bits != 0) & (bits < 0x7E800000), bits, 0x3F800000)
    return (0x7F000000 - bits).to(tl.float32, bitcast=True), bits.to(
        tl.float32, bitcast=True
    )  # 2^(127 - e), 2^e


@triton.jit
def _pow2_rows(x):
    """``(x / p, p)`` for an fp32 ``[R, C]`` tile, ``p`` (``[R]``) per row (``_pow2_scale``; ``chunk_bwd.DK_LOWP``)."""
    inv, p = _pow2_scale(tl.max(tl.abs(x), 1))
    return x * inv[:, None], p


@triton.jit
def _pow2_groups16(x, R: tl.constexpr, C: tl.constexpr):
    """``(x / p, p)`` for an fp32 ``[R, C]`` tile (``C`` a multiple of 16), ``p`` (``[R, C // 16]``) per row and group
    of 16 columns (``_pow2_scale``; ``chunk_bwd.DH_F16``)."""
    xg = tl.reshape(x, [R, C // 16, 16])
    inv, p = _pow2_scale(tl.max(tl.abs(xg), 2))
    return tl.reshape(xg * inv[:, :, None], [R, C]), p


@triton.jit
def _times_groups16(x, S, base, o_row, col0, m_row, N: tl.constexpr, R: tl.constexpr, C: tl.constexpr):
    """``x`` (an fp16 ``[R, C]`` tile of ``_pow2_groups16``'s quotients, at rows ``o_row`` of ``N`` elements and
    columns ``col0 + arange(C)`` of a buffer from element ``base``; ``N``, ``C``, ``col0`` and ``base`` multiples of
    16) back in fp32: times its scales, element ``e``'s at ``S[e // 16]``. The scales come as an ``[R, C // 16]``
    tile broadcast over each group: a per-element gather of ``S`` made every reader 3x slower (H200, session 49:
    dqkwg 0.83 -> 2.73 ms, 4-byte cp.async per element)."""
    o_g = col0 // 16 + tl.arange(0, C // 16)
    s = tl.load(
        S + (base // 16 + o_row[:, None] * (N // 16) + o_g[None, :]),
        mask=m_row[:, None] & (o_g < N // 16)[None, :],
        other=0.0,
    )
    xg = tl.reshape(x.to(tl.float32), [R, C // 16, 16])
    return tl.reshape(xg * s[:, :, None], [R, C])


@triton.jit
def _l2n(x, R, rows, m_rows, i_h, H: tl.constexpr, NORM: tl.constexpr):
    """A loaded ``[rows, BK]`` tile of q or k (``[T, H, K]``, head ``i_h``), L2-normalised on load when
    ``NORM``: times its rows' ``1 / sqrt(sum x^2 + eps)`` from ``R [T, H]`` fp32 (``l2norm.l2norm_rstd``),
    rounded back to x's dtype. That is bitwise what ``l2norm_fwd`` stores for the chunk kernels (the
    same fp32 product and rounding), without the normalised copy: no [T, H, K] write and re-read."""
    if NORM:
        r = tl.load(R + rows * H + i_h, mask=m_rows, other=0.0)
        return (x.to(tl.float32) * r[:, None]).to(x.dtype)
    else:
        return x


# The chunked kernels work with chunk-local gate cumsums G and products exp(G_i - G_j): a g = -inf token (exp(g) = 0,
# a hard state reset, which SPEC allows: g <= 0) would make -inf - -inf = NaN there and poison the rest of the
# chunk's head. Gates are floored at GATE_FLOOR on load instead: exp of anything at or below it is 0 in fp32 (e^-128
# ~ 2.6e-56, below the smallest subnormal e^-103.3), so the forward is what exp(-inf) = 0 gives, and G stays finite.
# NaN gates stay NaN (the floor is a compare-and-select, not a max, which would drop a NaN operand).
GATE_FLOOR = tl.constexpr(-128.0)


@triton.jit
def _floor_gate(g):
    return tl.where(g < GATE_FLOOR, GATE_FLOOR, g)


@triton.jit
def _dot_f32_lhs(a, b, DOT_PREC: tl.constexpr, KEEP: tl.constexpr = False):
    """``a @ b`` for an fp32 ``a`` (a masked score matrix) and a half/fp32 ``b``. With exact
    products (fp16/fp32 inputs) ``a`` keeps fp32; for bf16 inputs it is rounded to bf16 for the
    tensor cores, as a bf16 kernel must (its rounding is below the reference run's bf16 error)."""
    if DOT_PREC == "ieee" or DOT_PREC == "tf32x3" or KEEP:
        return tl.dot(a, b.to(tl.float32), input_precision=DOT_PREC)
    else:
        return tl.dot(a.to(b.dtype), b, input_precision=DOT_PREC)


@triton.jit
def _dot_lhs_f32_rhs(a, b, DOT_PREC: tl.constexpr, KEEP: tl.constexpr = False):
    """``a @ b`` for a half/fp32 ``a`` and an fp32 ``b`` (a masked score matrix): ``_dot_f32_lhs`` with
    the fp32 operand on the right."""
    if DOT_PREC == "ieee" or DOT_PREC == "tf32x3" or KEEP:
        return tl.dot(a.to(tl.float32), b, input_precision=DOT_PREC)
    else:
        return tl.dot(a, b.to(a.dtype), input_precision=DOT_PREC)


# Launch configs (BV, num_warps, num_stages) are chosen by the launchers from the shapes (below),
# not by triton.autotune: the best V split depends on how many (sequence, head) programs run, which
# an autotune key of constexpr shapes cannot see. ``CONFIG_OVERRIDE`` (kernel name -> config) is
# for benchmarks and the config sweep (benchmarks/gated_delta_config_sweep.py); the environment
# variable ``JAGATTN_GD_CONFIG="kernel=a,b,c;..."`` fills it at import (device checks; parsed after
# ``CANDIDATES``, which give the kernel names and config lengths it accepts).
CONFIG_OVERRIDE: dict = {}

# K-row width (bytes) past which launch_config picks the shared-memory-light configs (see there), and up
# to which the state passes may take three pipeline stages at a V block of 16
WIDE_K_ROW_BYTES = 512
DEEP_K_ROW_BYTES = 256

# Candidate configs per kernel: the sweep checks each gives the default's result (bitwise where the
# arithmetic does not depend on the config, to rounding where it does).
#
# Not offered: BV < 64 at 4 warps in ``fwd_o`` / ``bwd_dv_local``, the two kernels whose [BT, BT]
# score tile (a dot result, masked and cast) is the left operand of a dot with a [BT, BV] tile. On
# Triton 3.6 / H200 that miscompiles: BV=32 or 16 at 4 warps gives wrong outputs (0.35-0.49 of max
# off) in fwd_o and an illegal memory access in bwd_dv_local, at K=64 and 128; at K=32 the outputs
# were off in a few elements by a bf16 rounding step. The same configs at 8 warps were bitwise equal
# to the default (sweep and probes of 2026-11-21). This is what the earlier per-config sweep hit.
# (BV, num_warps, num_stages) offered to the three state passes (fwd_h, bwd_h, bwd_dhu)
_STATE_PASS_CONFIGS = [(bv, w, s) for bv in (16, 32, 64) for w in (4, 8) for s in (1, 2)] + [
    (32, 4, 3), (32, 4, 4), (64, 4, 3), (32, 2, 2), (32, 2, 3), (64, 2, 3),
]  # fmt: skip
CANDIDATES = {
    # the sequential passes: the launcher picks BV from the program count at 4 warps and 2 stages; the
    # deeper pipelines and 2 warps (session 5) are for the device sweep
    "fwd_h": _STATE_PASS_CONFIGS,
    # the forward's state pass writing o itself (chunk_fwd.FUSE_O): (BV, warps, stages of the fused loop; the
    # unfused loop of the same launch keeps fwd_h's stages), V blocks of 64 only. One stage first: H200 (session
    # 23 round 1, H16-8seqs forward) 0.777 ms at (64, 4, 1) against 1.238 at two stages (124 KB of shared memory:
    # one program per SM) and 1.254 at (64, 8, 2); the unfused pass + output kernel 0.870
    "fwd_h_o": [(64, 4, 1), (64, 8, 1), (64, 4, 2), (64, 8, 2)],
    "fwd_o": [(bv, w, s) for bv in (64, 128) for w in (4, 8) for s in (1, 2)],
    "bwd_dv_local": [(bv, w, s) for bv in (64, 128) for w in (4, 8) for s in (1, 2)],
    # (BC: column tile, num_warps, num_stages) of the w/u kernel (the "loop" variant walks the K then
    # the V columns in BC tiles with T loaded once; "tiles" runs a program per tile). First = default
    # (4 warps, Triton's default 3 stages: the launch before session 8). Not offered: BC < 64 at 4 warps
    # (with WU_LOWP, T cast to bf16 is the left operand: the Triton 3.6 miscompile pattern above).
    "fwd_wu": [(64, 4, 3)] + [(bc, w, s) for bc in (64, 128) for w in (4, 8) for s in (1, 2)] + [(32, 8, 2)],
    # the backward's recompute (chunk_fwd._state_pass with stage "bwd_h"): fwd_h's kernel and rule, a name of its own so
    # that a device sweep can set it apart from the forward's pass (with chunk_bwd.OVERLAP it shares the GPU with dhu)
    "bwd_h": _STATE_PASS_CONFIGS,
    "bwd_dhu": _STATE_PASS_CONFIGS,
    "fwd_recurrent": [(bv, w, 1) for bv in (16, 32, 64) for w in (4, 8)],
    # fp32 training's reverse token loop (backends.FP32_TRAIN): S, dS and S_a in registers. Local Triton 3.6 sm_90, V =
    # 128 with gk, registers at K = 128 / 256: (16, 4, 1) 168 / 244, (32, 8, 1) 218 / 226, no spill (session 52; not
    # timed yet: V blocks of 32 halve the per-V-block gradient parts)
    "bwd_recurrent": [(16, 4, 1), (32, 8, 1)],
    # (inverse by powers instead of forward substitution, num_warps, unused)
    "fwd_kkt_solve": [(p, w, 1) for p in (0, 1) for w in (1, 2, 4)],
    # (BV, num_warps, num_stages, key block: dq/dk columns per program, partial gate sums added in wy)
    # H200 bwd totals, H16 8x4096 (ms): (32,8,3,128) 5.10, (64,4,2,64) 5.21, (32,4,3,64) 5.34 (session 5's
    # kernels). Session 13 (current kernels, benchmarks/gd_switch_ab.py "config:", same process, public
    # backward ms, default -> (32,4,3,64) with bwd_wy (64,4,2)): H16-8seqs 2.946 -> 2.830, H16-1seq 4.474
    # -> 4.340, H16-64seqs 2.987 -> 2.863, H16-ragged 3.310 -> 3.195, H32-8seqs 5.936 -> 5.670; alone
    # each config gives about half of that; (64,4,2,64) ties. Gradients bitwise but dg (4.7e-7 of its max:
    # the two key blocks' partial gate sums add in another order).
    "bwd_dqkwg": [
        (32, 4, 3, 64),
        (32, 8, 3, 128),
        (64, 4, 2, 64),
        (32, 8, 3, 64),
        (64, 8, 3, 64),
        (32, 4, 1, 32),
        # one stage; one key block at K = 128 (session 25 round 5, H200, H16-8seqs / H16-1seq backward ms against
        # 2.65 / 4.20 at the default, every gradient but dg bitwise, dg within 6e-7 of its max): (32,8,1,128)
        # 3.09 / 4.61, (32,4,1,128) 3.41 / 4.93, (64,4,1,128) 3.15 / 4.69, (64,4,1,64) 2.77 / 4.29. No key block
        # < 64 at 4 warps beyond (32,4,1,32) (the miscompile pattern)
        (32, 8, 1, 128),
        (32, 4, 1, 128),
        (64, 4, 1, 128),
        (64, 4, 1, 64),
    ],
    # (BC: column tile, num_warps, num_stages); first = default. H200 bwd totals of the session-5 kernel
    # with two DK updates, H16 8x4096 (ms): (64,4,1) 3.71, (64,4,2) 3.75, (32,4,2) 3.78, (32,4,1) 3.84,
    # (16,4,1) 4.16, (64,8,1) 4.18, (64,8,2) 4.19, (32,8,2) 4.54
    "bwd_wy": [
        # no column tile < 64 at 4 warps: with T in bf16 that is the Triton 3.6 Hopper miscompile pattern
        # (a masked [64, 64] tile cast to 16 bits as the left operand of a [64, 16/32] dot). Two stages
        # first since session 13 (same A/B as bwd_dqkwg: H16-8seqs backward 2.946 -> 2.891 ms alone,
        # H16-1seq 4.474 -> 4.402, bitwise the same gradients)
        (64, 4, 2),
        (64, 4, 1),
        (64, 8, 2),
        (32, 8, 2),
        (64, 8, 1),
        (16, 8, 1),
    ],
}


# bwd_dqkwg's config for K rows of at most DEEP_K_ROW_BYTES (launch_config)
DQKWG_NARROW_ROWS = (64, 4, 2, 64)


def parse_config_override(text: str) -> dict[str, tuple[int, ...]]:
    """``JAGATTN_GD_CONFIG`` (``"kernel=a,b,c;..."``, empty items skipped) as kernel -> config. A
    ValueError naming the variable for an item without ``=``, a kernel not in ``CANDIDATES``, a value
    that is not an integer or a config whose length no candidate of that kernel has; a UserWarning for a config
    that is not one of its kernel's candidates (accepted for device experiments, but unchecked: some such configs
    give wrong results on Triton 3.6 / Hopper, e.g. ``bwd_dqkwg`` key blocks of 16 at 4 warps, session 54)."""
    out: dict[str, tuple[int, ...]] = {}
    for item in filter(str.strip, text.split(";")):
        name, sep, cfg = (part.strip() for part in item.partition("="))
        if not sep or name not in CANDIDATES:
            raise ValueError(
                f"JAGATTN_GD_CONFIG items must be kernel=a,b,... with kernel one of "
                f"{', '.join(CANDIDATES)} (got {item.strip()!r})"
            )
        lengths = sorted({len(c) for c in CANDIDATES[name]})
        try:
            values = tuple(int(x) for x in cfg.split(","))
        except ValueError:
            values = ()  # not integers: reported with the lengths below
        if len(values) not in lengths:
            raise ValueError(
                f"JAGATTN_GD_CONFIG: {name} takes {' or '.join(map(str, lengths))} integers (got {item.strip()!r})"
            )
        if values not in CANDIDATES[name]:
            warnings.warn(
                f"JAGATTN_GD_CONFIG: {name}={cfg.strip()} is not one of {name}'s candidate configs "
                f"({', '.join(','.join(map(str, c)) for c in CANDIDATES[name])}): it is used, but no test or device "
                "check covers it, and configs outside the candidates can miscompile on Triton 3.6 / Hopper (wrong "
                "results, no error; see CANDIDATES in jagattn/gated_delta/triton/common.py)",
                UserWarning,
                stacklevel=2,
            )
        out[name] = values
    return out


CONFIG_OVERRIDE.update(parse_config_override(os.environ.get("JAGATTN_GD_CONFIG", "")))


@functools.cache
def _num_sms(index: int) -> int:
    import torch

    if not torch.cuda.is_available():
        return 132
    return torch.cuda.get_device_properties(index).multi_processor_count


# The state passes can issue their loads that feed no dot (the gates; the backward's recompute also its
# dS tile for the gate sums) one chunk ahead (``PREFETCH`` of ``fwd_h`` / ``bwd_dhu``): the same
# arithmetic, bitwise the same outputs. H200 (session 13, benchmarks/gd_switch_ab.py, public backward,
# same process): the recompute with its fp32 dS prefetched is faster on every row (H16-1seq 1.153 ->
# 0.940 ms, H16-8seqs 0.407 -> 0.375, H16-ragged 0.566 -> 0.492), while the gate prefetch alone slows
# the forward's fwd_h at V blocks of 64 (0.226 -> 0.236 ms on H16-8seqs) and bwd_dhu everywhere but one
# sequence (0.472 -> 0.566 on H16-8seqs; presumably registers), so "auto" (default) prefetches in the
# recompute only; "0" / "1": never / in all three. Read at every launch (a probe may flip it).
STATE_PREFETCH = env_choice("JAGATTN_GD_STATE_PREFETCH", ("auto", "0", "1"), "auto")


def state_prefetch(kernel: str) -> bool:
    """Whether ``kernel`` (``"fwd_h"``, ``"fwd_h_recompute"`` (with the gate sums), ``"bwd_dhu"``)
    prefetches its non-dot loads one chunk ahead (``STATE_PREFETCH``)."""
    if STATE_PREFETCH == "auto":
        return kernel == "fwd_h_recompute"
    return STATE_PREFETCH in ("1", True)


def launch_config(
    kernel: str, *, n_programs: int, v: int, device_index: int = 0, k_row_bytes: int = 0
) -> tuple[int, ...]:
    """``(BV, num_warps, num_stages)`` of one launch (``bwd_dqkwg``, ``bwd_wy``, ``fwd_wu``: see ``CANDIDATES``).
    ``n_programs`` counts the programs of the grid
    before the V split; sequential kernels (state passes) take the widest V block that still fills
    the GPU twice, since their programs are latency-bound chains over the chunks. ``k_row_bytes`` (K
    times the wider of the q/k and intermediate element sizes) past ``WIDE_K_ROW_BYTES`` gives the state
    passes one pipeline stage and ``fwd_o`` / ``bwd_dv_local`` BV=64 with one stage: fp16 inputs at
    K = 256 (fp32 states, q/k normalised in fp32) needed 256-269 KB of shared memory otherwise, over the
    227 KB per block of H100/H200 (``OutOfResources`` on the device, session 9)."""
    if kernel in CONFIG_OVERRIDE:
        return CONFIG_OVERRIDE[kernel]
    if not isinstance(v, int):
        v = 128  # symbolic head dim: any choice below is valid for every V
    wide_k = k_row_bytes > WIDE_K_ROW_BYTES
    if kernel == "fwd_kkt_solve":
        return (0, 1, 1)  # forward substitution, one warp (16x16 tiles: no cross-warp reductions)
    if kernel in ("fwd_o", "bwd_dv_local"):
        # never BV < 64 at 4 warps (see CANDIDATES); wide K rows: fwd_o at BV=128 needed 256 KB at one
        # or two stages (fp16 K=256, sm_90)
        if wide_k:
            return (64, 4, 1)
        return (128 if v > 64 else 64, 4, 2)
    if kernel == "bwd_dqkwg" and 0 < k_row_bytes <= DEEP_K_ROW_BYTES:
        # bf16 q/k and states at K <= 128 (the speed path): V blocks of 64 at two stages. H200, session 35 round 6
        # (benchmarks/gd_switch_ab.py, same process, gradients bitwise the default's): dqkwg 0.756 -> 0.741 ms,
        # backward 2.505 -> 2.483 ms on H16-8seqs; 0.764 -> 0.743, 2.877 -> 2.863 on H16-ragged; round 7: dqkwg
        # 0.749 -> 0.729 (H16-1seq), 0.769 -> 0.759 (H16-64seqs), 1.523 -> 1.506 (H32-8seqs), bitwise, backward
        # within noise there. chunk_bwd passes a row size only for 16-bit copies and states (else 0); wider rows
        # keep the first candidate: locally (Triton 3.9, sm_90) fp16 at K = 128 spills 1336 B there against 1136
        # at (32, 4, 3, 64)
        return DQKWG_NARROW_ROWS
    if kernel in ("bwd_dqkwg", "bwd_wy", "fwd_wu", "fwd_h_o"):
        return CANDIDATES[kernel][0]
    if kernel == "fwd_recurrent":
        return (min(32, max(16, triton.next_power_of_2(v))), 4, 1)
    if (
        kernel == "bwd_recurrent"
    ):  # fp32 training's token loop: S, dS and S_a live in registers (not yet tuned)
        return (min(16, triton.next_power_of_2(v)), 4, 1)
    if kernel in ("fwd_h", "bwd_h", "bwd_dhu"):
        # the widest V block that fills the GPU once: fwd_h BV 64 is 22% faster than 32 on H16 8 x 4096
        # (128 (sequence, head) chains; H200, session 5); bwd_dhu (with the fused local dv since session
        # 9) 6% faster at 64 than 32 there (session 12, benchmarks/gd_state_pass_probe.py; it kept the
        # 2x rule, i.e. 32, before). V blocks of 16 (fewer than SMs/4 chains, e.g. one 32k sequence x 16
        # heads) take three pipeline stages: fwd_h 0.536 vs 0.804 ms, the backward 4.660 vs 4.851 ms on
        # H16-1seq (same probe); 1 or 2 warps (mma.sync) and BV 16 at 8 warps were slower everywhere.
        # Only for K rows of at most DEEP_K_ROW_BYTES (bf16 states at K <= 128): bwd_dhu of fp16 at K=128
        # (fp32 q/k and states, 512-byte rows) needs 287 KB of shared memory at three stages (sm_90).
        if not isinstance(n_programs, int):
            # symbolic batch (compile/export with dynamic dims): a count-dependent choice would add guards
            return (min(32, max(16, triton.next_power_of_2(v))), 4, 1 if wide_k else 2)
        sms = _num_sms(device_index)
        bv = 64
        while bv > 16 and n_programs * triton.cdiv(v, bv) < sms:
            bv //= 2
        if kernel == "bwd_dhu" and k_row_bytes > DEEP_K_ROW_BYTES:
            # fp32 states / q/k at K = 128 (fp16 inputs, the bf16 precise path) or K = 256: the fused
            # local-dv dhu at BV 64 needs 263-271 KB of shared memory (sm_90; OutOfResources on the H200
            # for fp16 with 72 chains in session 12, and before that from 132 chains on)
            bv = min(bv, 32)
        bv = min(bv, max(16, triton.next_power_of_2(v)))
        deep = bv == 16 and k_row_bytes <= DEEP_K_ROW_BYTES
        return (bv, 4, 1 if wide_k else 3 if deep else 2)
    raise KeyError(kernel)


def dot_precision(dtype, kernel: str | None = None) -> str:
    """``input_precision`` of every ``tl.dot`` (it only matters for fp32 operands), from the *input*
    dtype (the launchers pass v's: q/k may be fp32 copies, v never is). tf32 keeps 10
    mantissa bits: finer than bf16's 7, so bf16 inputs use it for their fp32 intermediates (T, W);
    fp16 (10 bits) and fp32 inputs need more than tf32, which would add input-dtype-sized errors the
    reference run does not have (measured on H200: fp32 o error 1e-3 relative; fp16 failed the SPEC
    rule on 26 of 30 seeds). fp16 takes split-tf32 products (``tf32x3``, near-fp32: 27 of 27 seeds
    passed, 15x faster than exact ones), fp32 exact ones (``ieee``); ``JAGATTN_GD_FP16_DOT`` /
    ``JAGATTN_GD_FP32_DOT`` choose otherwise; ``kernel`` (a ``FP16_TF32_KERNELS`` name) lets
    ``JAGATTN_GD_FP16_TF32`` pick tf32 for single fp16 kernels."""
    import torch

    if dtype == torch.float16:
        return "tf32" if FP16_PATH == "half" or kernel in FP16_TF32 else FP16_DOT
    return BF16_DOT if dtype == torch.bfloat16 else FP32_DOT


# bf16 precision knobs for device experiments (session 9: small random bf16 batches failed the SPEC
# rule by up to 2.1x the allowance; fp32 intermediates and exact dots each removed part of it):
# JAGATTN_GD_BF16_DOT: input_precision of the dots with fp32 operands ("tf32x3" also keeps the fp32
# operands that "tf32" rounds to bf16 for a bf16 partner, as "ieee" does); JAGATTN_GD_BF16_FP32: which
# intermediates of bf16 inputs are stored in fp32 instead of bf16 (comma list of BF16_INTERMEDIATES,
# or "all"): qk (normalised q/k), w, u, h (per-chunk states), vnew, du, dw, dq.
BF16_INTERMEDIATES = ("qk", "w", "u", "h", "vnew", "du", "dw", "dq")
BF16_DOT = env_choice("JAGATTN_GD_BF16_DOT", ("tf32", "tf32x3", "ieee"), "tf32")
# JAGATTN_GD_FP16_DOT (ieee | tf32 | tf32x3): the products of fp16 inputs, which keep their chunk
# intermediates in fp32. tf32 also sets KEEP in every kernel (fp32 operands stay fp32).
# Session 11 (H200, Triton 3.6): the exact products cost fp16 150x bf16 (H16-8seqs fwd 162 ms, bwd 538 ms
# vs 1.04 / 3.31); tf32 ran 2.79 / 7.58 ms but failed the SPEC rule on 26 of 30 fp16 fuzz seeds (o about
# 2-4x the reference error: Triton's tf32 truncates the fp32 operand, it does not round). "tf32x3" splits
# every fp32 operand into two tf32 parts (three tensor-core products, near-fp32 accuracy).
# Round 3: tf32x3 passed the fuzz on 27 of 27 fp16 seeds (and the fp16 gpu tests) at H16-8seqs fwd 10.6 /
# bwd 38.4 ms, 15x faster than ieee (still ~10x bf16's speed path): the default since. tf32 with the
# operands rounded to nearest in the kernel (an experiment removed again, see the README) still failed
# 21 of 29.
FP16_DOT = env_choice("JAGATTN_GD_FP16_DOT", ("ieee", "tf32", "tf32x3"), "tf32x3")
# JAGATTN_GD_FP16_PATH=half (experiment, session 11): fp16 inputs through bf16's speed path instead
# (intermediates stored in fp16, fp16 tensor-core products, tf32 for the fp32 T / score operands rounded
# to fp16 for an fp16 partner); fp16's reference run rounds to fp16 as well. "split" (default): fp32
# intermediates and FP16_DOT products.
FP16_PATH = env_choice("JAGATTN_GD_FP16_PATH", ("split", "half"), "split")
# JAGATTN_GD_FP32_DOT=tf32x3 (experiment): fp32 inputs on split-tf32 products instead of exact ones
FP32_DOT = env_choice("JAGATTN_GD_FP32_DOT", ("ieee", "tf32x3"), "ieee")


def _name_set(var: str, text: str, names: tuple) -> frozenset:
    """The comma list ``text`` of environment variable ``var``: names from ``names``, or ``all``."""
    items = {x.strip() for x in text.split(",") if x.strip()}
    if items == {"all"}:
        return frozenset(names)
    bad = items - set(names)
    if bad:
        raise ValueError(f"{var} takes 'all' or names from {names} (got {sorted(bad)})")
    return frozenset(items)


def _fp32_set(text: str) -> frozenset:
    return _name_set("JAGATTN_GD_BF16_FP32", text, BF16_INTERMEDIATES)


BF16_FP32 = _fp32_set(os.environ.get("JAGATTN_GD_BF16_FP32", ""))


# JAGATTN_GD_BF16_KEEP: kernels (KEEP_KERNELS, or "all") whose fp32 dot operands stay fp32 (tf32
# products, bf16 partners converted exactly) for bf16 inputs instead of being rounded to bf16
KEEP_KERNELS = ("fwd_h", "fwd_o", "dv_local", "dhu", "dqkwg", "wy")


def _keep_set(text: str) -> frozenset:
    return _name_set("JAGATTN_GD_BF16_KEEP", text, KEEP_KERNELS)


BF16_KEEP = _keep_set(os.environ.get("JAGATTN_GD_BF16_KEEP", ""))

# JAGATTN_GD_FP16_TF32 (experiment, session 11): fp16 kernels (KEEP_KERNELS, kkt, wu, or "all") that take
# tf32 products (with KEEP where the kernel has it) instead of FP16_DOT's split-tf32 ones: which
# kernels need the split for fp16 to meet the SPEC rule (all of them at tf32 fail it, round 2).
FP16_TF32_KERNELS = KEEP_KERNELS + ("kkt", "wu")
FP16_TF32 = _name_set("JAGATTN_GD_FP16_TF32", os.environ.get("JAGATTN_GD_FP16_TF32", ""), FP16_TF32_KERNELS)


# bf16 precision by problem size (JAGATTN_GD_BF16_PRECISE=auto|on|off, default auto). The bf16 speed
# path (bf16 intermediates, fp32 operands rounded to bf16 for the tensor cores) failed the SPEC rule on
# many small random bf16 batches in the GPU fuzz (sessions 9-10; FLA failed or crashed on the same
# seeds). The precise path stores every intermediate but the normalised q/k in fp32 and keeps fp32 dot
# operands (tf32 products, KEEP in every kernel). "auto" takes it up to PRECISE_MAX_TOKENS tokens and
# PRECISE_MAX_TOKEN_HEADS tokens x value heads, the speed path above (what it passes and costs, and why
# the token limit: the gated delta README, session 10).
BF16_PRECISE = env_choice("JAGATTN_GD_BF16_PRECISE", ("auto", "on", "off"), "auto")
PRECISE_MAX_TOKENS = 4096
PRECISE_MAX_TOKEN_HEADS = 65536


def bf16_precise(dtype, t: int, hv: int) -> bool:
    """True when bf16 inputs of ``t`` tokens and ``hv`` value heads take the precise path (see
    BF16_PRECISE); from shapes only, so the forward and the backward of a call agree. A symbolic ``t``
    (torch.compile with dynamic shapes) should get a guard on the limits rather than a fixed choice, so
    that a compiled call computes what the eager one does (not exercised yet: the gpu compile tests
    use static shapes)."""
    import torch

    if dtype != torch.bfloat16 or BF16_PRECISE == "off":
        return False
    return BF16_PRECISE == "on" or (t <= PRECISE_MAX_TOKENS and t * hv <= PRECISE_MAX_TOKEN_HEADS)


def keep_fp32(dtype, kernel: str, t: int, hv: int) -> bool:
    """The ``KEEP`` constexpr of ``kernel`` for inputs of ``dtype`` (see ``_c``; ``dtype`` is the input
    dtype, not that of fp32 q/k copies): bf16 inputs on the precise path or named in
    ``JAGATTN_GD_BF16_KEEP``, fp16 inputs with tf32 products (``JAGATTN_GD_FP16_DOT=tf32``, or the
    kernel named in ``JAGATTN_GD_FP16_TF32``)."""
    import torch

    if kernel not in KEEP_KERNELS:
        raise KeyError(kernel)
    if dtype == torch.float16:
        return FP16_PATH != "half" and (FP16_DOT == "tf32" or kernel in FP16_TF32)
    return dtype == torch.bfloat16 and (kernel in BF16_KEEP or bf16_precise(dtype, t, hv))


def inter_dtype(dtype, what: str, t: int, hv: int):
    """Storage dtype of the chunk intermediates (W, U~, v_new, per-chunk states, ...): the input dtype
    for bf16 on the speed path, fp32 for bf16 on the precise path (``bf16_precise``) and for
    fp16/fp32 inputs, which then add no rounding beyond the reference run's (fp16 is a correctness
    path here, not a speed one)."""
    import torch

    # normalised q/k stay bf16 on the precise path: measured with fp32 copies (session 10, round 4, when the
    # dot precision still followed q's dtype: exact products) it was 10-25x slower; the copies would now
    # get tf32 products, still twice the q/k traffic and half the tensor-core rate (not measured)
    if dtype == torch.bfloat16 and what not in BF16_FP32 and (what == "qk" or not bf16_precise(dtype, t, hv)):
        return dtype
    if dtype == torch.float16 and FP16_PATH == "half":
        return dtype
    return torch.float32


def exact_exp(dtype) -> bool:
    import torch

    return dtype == torch.float32


def block_k(k: int) -> int:
    return max(16, triton.next_power_of_2(k))
