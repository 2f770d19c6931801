"""Pieces shared by the attention kernels: the varlen block schedule, tile loads, softcap's tanh.

Varlen schedule. A kernel that works on blocks of ``BLOCK`` rows of packed sequences is launched
with ``Tq // BLOCK + B`` programs along grid axis 0 (no ``max_seqlen`` and no host sync). Slot
``start_b = cu[b] // BLOCK + b`` is reserved for the first block of sequence ``b``; sequence ``b``
needs ``cdiv(len_b, BLOCK) <= start_{b+1} - start_b`` slots, so the ranges never overlap. A
program finds its sequence by a binary search over ``cu`` (log2(B) scalar loads from L2) and
exits at once if its slot lies past the end of that sequence: at most ``B`` idle programs per
head, instead of ``B * cdiv(max_seqlen, BLOCK)`` for the usual (block, head, sequence) grid,
and a ``max_seqlen`` that is too small cannot cause an out-of-bounds access because it is not
used at all.

The search is written out in each kernel rather than called as a helper: torch's TTIR mutation
analysis (``torch.library.wrap_triton`` under torch.compile / AOT autograd) treats a value
returned by a called ``@triton.jit`` function as derived from every argument of the call, so a
helper that takes ``cu_seqlens`` and returns an index used in a store address made
``cu_seqlens`` look written, and the autograd partitioner then failed on the "mutated" input.
"""

from __future__ import annotations

import triton
import triton.language as tl

from ..._core.triton_utils import autotune_enabled

LOG2E = 1.4426950408889634
LN2 = 0.6931471805599453
# @triton.jit code writes these as literals: the compiler rejects non-constexpr globals (the
# interpreter does not), and Inductor re-emits user kernels, which literals survive for sure

# JAGATTN_AUTOTUNE=0 (or JAGATTN_ATTENTION_AUTOTUNE=0): every kernel runs the first config that
# fits its head dims, untimed. Read once at import so the prune functions stay free of
# environment reads when torch.compile traces them.
AUTOTUNE = autotune_enabled("attention")


# shared memory a block may use on Hopper (227 KiB); the prune estimates below were checked
# against the sizes Triton reports for compiled kernels (benchmarks/attention_compile_check.py)
SMEM_LIMIT = 227 * 1024


def fitting_configs(configs, fits):
    """The configs for which ``fits(config)`` holds (the last config if none does); the first one only
    when autotuning is off."""
    keep = [c for c in configs if fits(c)] or list(configs[-1:])
    return keep if AUTOTUNE else keep[:1]


def num_slots(total_rows: int, batch: int, block: int) -> int:
    """Grid size along axis 0 for the varlen schedule described in the module docstring."""
    return total_rows // block + batch


@triton.jit
def _tanh(x):
    # 1 - 2 / (exp(2x) + 1): saturates to +-1 without inf/inf, same code on GPU and interpreter.
    e = tl.math.exp2(x * 2.8853900817779268)
    return 1.0 - 2.0 / (e + 1.0)


@triton.jit
def _load_tile(ptrs, m_row, m_col, ROW_MASK: tl.constexpr, COL_MASK: tl.constexpr):
    """Load a [R, C] tile; masked-off elements read as 0. Masks are skipped when known all-true."""
    if ROW_MASK:
        if COL_MASK:
            x = tl.load(ptrs, mask=m_row[:, None] & m_col[None, :], other=0.0)
        else:
            x = tl.load(ptrs, mask=m_row[:, None], other=0.0)
    else:
        if COL_MASK:
            x = tl.load(ptrs, mask=m_col[None, :], other=0.0)
        else:
            x = tl.load(ptrs)
    return x


@triton.jit
def _kv_bases(
    K, V, bos_k, lk, i_hk, stride_kt, stride_kh, stride_vt, stride_vh,
    D: tl.constexpr, DV: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_DV: tl.constexpr,
    TMA: tl.constexpr,
):  # fmt: skip
    """The K/V tile bases of one sequence and kv head for the key loops of the forward and dQ kernels.
    ``TMA``: device-side descriptors of shape ``[lk, D]`` / ``[lk, DV]`` (rows past the sequence and columns
    past the head dim read zeros; load with ``.load([n0, 0])``); else ``[BLOCK_N, BLOCK_D]`` pointer tiles at
    the sequence's first key (add ``n0 * stride`` and load with ``_load_tile`` and the row/column masks)."""
    if TMA:
        p_k0 = tl.make_tensor_descriptor(
            K + bos_k.to(tl.int64) * stride_kt + i_hk * stride_kh, shape=[lk, D], strides=[stride_kt, 1],
            block_shape=[BLOCK_N, BLOCK_D],
        )  # fmt: skip
        p_v0 = tl.make_tensor_descriptor(
            V + bos_k.to(tl.int64) * stride_vt + i_hk * stride_vh, shape=[lk, DV], strides=[stride_vt, 1],
            block_shape=[BLOCK_N, BLOCK_DV],
        )  # fmt: skip
    else:
        o_n0 = tl.arange(0, BLOCK_N)
        p_k0 = (
            K
            + (bos_k + o_n0).to(tl.int64)[:, None] * stride_kt
            + i_hk * stride_kh
            + tl.arange(0, BLOCK_D)[None, :]
        )
        p_v0 = (
            V
            + (bos_k + o_n0).to(tl.int64)[:, None] * stride_vt
            + i_hk * stride_vh
            + tl.arange(0, BLOCK_DV)[None, :]
        )
    return p_k0, p_v0


@triton.jit
def _block_ranges(lo, hi, full_lo, full_hi, BLOCK: tl.constexpr):
    """Split the rows ``[lo, hi)`` touched by a tile into block-aligned phases.

    Returns ``(start, a, b, stop)``: blocks ``[start, a)`` and ``[b, stop)`` need the element mask,
    blocks ``[a, b)`` lie inside ``[full_lo, full_hi)`` (every element visible) and skip it.
    ``lo >= 0`` is required.
    """
    start = (lo // BLOCK) * BLOCK
    stop = start + tl.cdiv(tl.maximum(hi - start, 0), BLOCK) * BLOCK
    a = start + tl.cdiv(tl.maximum(full_lo - start, 0), BLOCK) * BLOCK
    a = tl.minimum(a, stop)
    b = a + (tl.maximum(full_hi - a, 0) // BLOCK) * BLOCK
    b = tl.minimum(b, stop)
    return start, a, b, stop
