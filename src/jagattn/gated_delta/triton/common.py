"""Pieces shared by the gated delta kernels: the varlen chunk schedule and the 16x16 inverse.

Varlen schedule. Chunks of ``BT = 64`` rows never cross sequences; the last chunk of a sequence
may be partial. Chunk ``i`` of sequence ``n`` lives in *slot* ``cu[n] // BT + n + i``: sequence
``n`` needs ``cdiv(len_n, BT)`` slots and owns ``cu[n+1] // BT - cu[n] // BT + 1 >= cdiv(len_n, BT)``
of them, so ranges never overlap and ``T // BT + N`` slots cover every chunk. Per-chunk buffers
(states ``h``, ``dh``) are indexed by slot, and chunk-parallel kernels launch one program per slot
and find their sequence by a binary search over ``cu_seqlens``: no chunk table, no host sync, and
at most ``N`` idle programs per head.

Miscompile guard (Triton >= 3.4 on Hopper): a ``tl.trans`` of a tensor that came out of a
``tl.dot`` and then feeds another ``tl.dot`` is miscompiled (the transposed MMA-layout operand;
flash-linear-attention issue 640). The kernels never do that: where both ``M`` and ``M^T`` of a
computed matrix are needed, ``M^T`` is computed by its own dot with the operands swapped, and
``tl.trans`` is applied only to tensors loaded from memory (or elementwise functions of them).
"""

from __future__ import annotations

import triton
import triton.language as tl

from ..._core.triton_utils import autotune_enabled
from ..._core.triton_utils import configs as _configs

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
def _c(x, dt, DOT_PREC: tl.constexpr):
    """A dot operand: in the input dtype ``dt`` for bf16 inputs (tensor cores), fp32 when products
    are exact (fp16/fp32 inputs) so no rounding is added that the reference run does not have."""
    if DOT_PREC == "ieee":
        return x.to(tl.float32)
    else:
        return x.to(dt)


@triton.jit
def _dot_f32_lhs(a, b, DOT_PREC: tl.constexpr):
    """``a @ b`` for an fp32 ``a`` (a masked score matrix) and a half/fp32 ``b``. With exact
    products (fp16/fp32 inputs) ``a`` keeps fp32; for bf16 inputs it is rounded to bf16 for the
    tensor cores, as a bf16 kernel must (its rounding is below the reference run's bf16 error)."""
    if DOT_PREC == "ieee":
        return tl.dot(a, b.to(tl.float32), input_precision=DOT_PREC)
    else:
        return tl.dot(a.to(b.dtype), b, input_precision=DOT_PREC)


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


def autotune_configs(gpu: list, interpreter) -> list:
    """The configs a kernel may run with: by default only the first GPU config.

    Only the first config of each list has been verified on the device's Triton (3.6, H200):
    production-size tests against the reference, bit-identical repeats, NaN-poisoned outputs,
    compute-sanitizer memcheck and initcheck clean. A per-config sweep there
    (``benchmarks/gated_delta_config_sweep.py``) saw every other config give different outputs and
    one (``dv_local`` BV=32, 4 warps, 2 stages) an illegal memory access; the cause was not
    isolated, so autotuning is off for this family unless ``JAGATTN_GATED_DELTA_AUTOTUNE=1`` (or
    ``JAGATTN_AUTOTUNE=1``) asks for it (``_core.triton_utils.autotune_enabled``).
    """
    if not autotune_enabled("gated_delta", default=False):
        gpu = gpu[:1]
    return _configs(gpu, interpreter)


def dot_precision(dtype) -> str:
    """``input_precision`` of every ``tl.dot`` (it only matters for fp32 operands). tf32 keeps 10
    mantissa bits: finer than bf16's 7, so bf16 inputs use it for their fp32 intermediates (T, W);
    fp16 (10 bits) and fp32 inputs get exact fp32 products, or tf32 would add input-dtype-sized
    errors the reference run does not have (measured on H200: fp32 o error 1e-3 relative)."""
    import torch

    return "tf32" if dtype == torch.bfloat16 else "ieee"


def inter_dtype(dtype):
    """Storage dtype of the chunk intermediates (W, U~, v_new, per-chunk states): the input dtype
    for bf16 (the speed path), fp32 for fp16/fp32 inputs, which then add no rounding beyond the
    reference run's (fp16 is a correctness path here, not a speed one)."""
    import torch

    return dtype if dtype == torch.bfloat16 else torch.float32


def exact_exp(dtype) -> bool:
    import torch

    return dtype == torch.float32


def block_k(k: int) -> int:
    return max(16, triton.next_power_of_2(k))


def block_v(v: int, cap: int = 64) -> int:
    return max(16, min(cap, triton.next_power_of_2(v)))
