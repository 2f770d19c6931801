"""What the Gluon kernels (``triton.experimental.gluon``; Hopper, eager calls) of every family share: the imports
under the installed Triton's spelling, the host-side TMA descriptors, the device / tensor guard, and an sm_90
compile entry point that needs no GPU (CI builds the kernels with its own Triton: Gluon's API moves between
releases, e.g. 3.9 renamed the TMA load and the CTA barrier; both spellings are handled here).

A family module does ``from ..._core.gluon import GLUON, gl, gluon, mbarrier, ...`` and defines its kernels under
``if GLUON:``; everything else runs its Triton kernels when ``GLUON`` is False.
"""

from __future__ import annotations

import functools

import torch
import triton

from .tma import tma_loads_ok
from .triton_utils import interpreter_enabled

try:  # Gluon's Hopper API (Triton >= 3.5); absent or incomplete elsewhere: the Triton kernels run
    from triton.experimental import gluon
    from triton.experimental.gluon import language as gl
    from triton.experimental.gluon.language.nvidia.hopper import (
        fence_async_shared,
        mbarrier,
        tma,
        warpgroup_mma,
        warpgroup_mma_wait,
    )
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

    # Triton 3.6 names the TMA load async_copy_global_to_shared (3.9 renamed it async_load and removed the old
    # name) and the CTA barrier thread_barrier (3.9: barrier)
    tma_load = tma.async_load if hasattr(tma, "async_load") else tma.async_copy_global_to_shared
    cta_barrier = gl.barrier if hasattr(gl, "barrier") else gl.thread_barrier
    GLUON = True
except (ImportError, AttributeError):  # pragma: no cover - depends on the installed Triton
    gluon = gl = fence_async_shared = mbarrier = tma = warpgroup_mma = warpgroup_mma_wait = (
        TensorDescriptor
    ) = None
    tma_load = cta_barrier = None
    GLUON = False

if GLUON:

    @gluon.jit
    def tma_load_pair(desc_a, desc_b, row, col_a, col_b, bar, dst_a, dst_b, pred):
        """One stage of a TMA ring: the ``[row, col_a]`` box of ``desc_a`` into ``dst_a`` and the ``[row, col_b]`` box
        of ``desc_b`` into ``dst_b``, both completing on the mbarrier ``bar`` (its expected byte count set here);
        nothing is issued where ``pred`` is false."""
        mbarrier.expect(bar, desc_a.block_type.nbytes + desc_b.block_type.nbytes, pred=pred)
        tma_load(desc_a, [row, col_a], bar, dst_a, pred=pred)
        tma_load(desc_b, [row, col_b], bar, dst_b, pred=pred)

    @gluon.jit
    def tma_load_pair_walk(desc_a, desc_b, end_a, end_b, bos, row, n, col_a, col_b, bar, dst_a, dst_b, pred,
                           CLIP: gl.constexpr):  # fmt: skip
        """One stage of a TMA ring walking the rows of one sequence (packed rows ``[bos, bos + n)``): the boxes from
        its row ``row`` into the 2-D tiles ``dst_a`` / ``dst_b``, completing on ``bar``; nothing issued where
        ``pred`` is false. ``desc_*`` are ``host_desc`` descriptors, ``end_*`` ``host_desc_to_end`` ones (or None
        where ``CLIP`` does not use them). Rows ``>= n``:

        - ``CLIP == 0``: the next sequence's rows (``desc_*``; the caller zeroes them where it must),
        - ``CLIP == 1``: zeros filled by TMA (``end_*``, every box),
        - ``CLIP == 2``: the same zeros, the full boxes through ``desc_*`` and only a box reaching past the end
          through ``end_*`` (the 3-D view only where it clips)."""
        ROWS: gl.constexpr = dst_a.shape[0]
        if CLIP == 1:
            mbarrier.expect(bar, end_a.block_type.nbytes + end_b.block_type.nbytes, pred=pred)
        else:
            mbarrier.expect(bar, desc_a.block_type.nbytes + desc_b.block_type.nbytes, pred=pred)
        if CLIP == 0:
            tma_load(desc_a, [bos + row, col_a], bar, dst_a, pred=pred)
            tma_load(desc_b, [bos + row, col_b], bar, dst_b, pred=pred)
        else:
            stop = gl.minimum(row + ROWS, n)
            z = bos + stop
            y = row + ROWS - stop
            clip = pred
            if CLIP == 2:
                full = y == 0
                tma_load(desc_a, [bos + row, col_a], bar, dst_a, pred=pred & full)
                tma_load(desc_b, [bos + row, col_b], bar, dst_b, pred=pred & full)
                clip = pred & (y != 0)
            tma_load(end_a, [z, y, col_a], bar, dst_a.reshape([1, ROWS, dst_a.shape[1]]), pred=clip)
            tma_load(end_b, [z, y, col_b], bar, dst_b.reshape([1, ROWS, dst_b.shape[1]]), pred=clip)

    @gluon.jit
    def _zero_rows_of(tile, first, ROWS: gl.constexpr, num_warps: gl.constexpr):
        layout: gl.constexpr = gl.BlockedLayout([1, 8], [4, 8], [num_warps, 1], [1, 0])
        for r in gl.static_range(0, ROWS, 16):
            if r + 16 > first:
                part = tile.slice(r, 16)
                rows = r + gl.arange(0, 16, layout=gl.SliceLayout(1, layout))
                x = part.load(layout)
                part.store(gl.where((rows < first)[:, None], x, gl.zeros_like(x)))

    @gluon.jit
    def zero_rows_from(q_tile, do_tile, first, ROWS: gl.constexpr, num_warps: gl.constexpr):
        """Zero rows ``[first, ROWS)`` of the ``[ROWS, *]`` shared-memory tiles ``q_tile`` and ``do_tile`` (landed by
        TMA, not yet read by a wgmma), in 16-row slices, skipping the slices below ``first``, and make the stores
        visible to the tensor cores of every warp (fence, then a CTA barrier).

        Why: a host-side descriptor spans the whole packed tensor, so a sequence's last, partial row block holds the
        next sequence's rows. Masking their scores is not enough where those rows are a product's reduction dim
        (``dV += P^T dO``, ``dK += dS^T Q``): a masked zero times an inf / NaN row is NaN, so one sequence's inputs
        would reach another's gradients. (``host_desc_to_end`` descriptors, session 41, make TMA deliver those rows as
        zeros instead: the HSTU dK/dV kernel's default.)"""
        _zero_rows_of(q_tile, first, ROWS, num_warps)
        _zero_rows_of(do_tile, first, ROWS, num_warps)
        fence_async_shared()
        cta_barrier()


_GL_DTYPES = {torch.float16: "float16", torch.bfloat16: "bfloat16"}
_SIG_DTYPES = {torch.float16: "fp16", torch.bfloat16: "bf16"}


def heads_in_row(t: torch.Tensor, width: int) -> bool:
    """Every head's columns inside one row of the packed ``[rows, heads * D]`` view a descriptor spans."""
    return t.stride(1) * (t.shape[1] - 1) + width <= t.stride(0)


def hopper_eager_ok(*tensors_and_widths: tuple[torch.Tensor, int]) -> bool:
    """The guard every Gluon kernel shares: Gluon's Hopper API imported, not the interpreter, CUDA fp16 / bf16
    tensors on a compute capability 9.0 device (wgmma), each loadable by TMA (``_core.tma.tma_loads_ok``: 16-byte
    aligned, contiguous last dim; never under torch.compile, export or opcheck) with every head's ``width`` columns
    inside one row of its packed view."""
    if not GLUON or interpreter_enabled():
        return False
    first = tensors_and_widths[0][0]
    if not first.is_cuda or first.dtype not in _GL_DTYPES:
        return False
    if torch.cuda.get_device_capability(first.device) != (9, 0):
        return False
    if not all(heads_in_row(t, w) for t, w in tensors_and_widths):
        return False
    return tma_loads_ok(*(t for t, _ in tensors_and_widths))


@functools.cache
def _smem_layout(rows: int, width: int, dtype: torch.dtype):
    """The NVMMA shared layout of a ``[rows, width]`` box (a frozen value; building it cost ~9 us of host time per
    descriptor on the H200 machine's host, session 27)."""
    return gl.NVMMASharedLayout.get_default_for([rows, width], getattr(gl, _GL_DTYPES[dtype]))


def host_desc(t: torch.Tensor, rows: int, width: int):
    """A host-side descriptor over ``t``'s packed ``[rows, stride(0)]`` view with ``[rows, width]`` boxes (a head's
    tile is at column ``head * stride(1)``)."""
    return TensorDescriptor(
        t, [t.shape[0], t.stride(0)], [t.stride(0), 1], [rows, width], _smem_layout(rows, width, t.dtype)
    )


class _RowsBefore:
    """The base a ``host_desc_to_end`` descriptor is encoded with: the address ``rows`` rows before ``t``'s first
    row (never dereferenced: see ``host_desc_to_end``), and ``t``'s dtype. Keeps ``t`` alive with the descriptor."""

    __slots__ = ("_t", "_ptr")

    def __init__(self, t: torch.Tensor, rows: int):
        self._t = t
        self._ptr = t.data_ptr() - rows * t.stride(0) * t.element_size()

    @property
    def dtype(self) -> torch.dtype:
        return self._t.dtype

    def data_ptr(self) -> int:
        return self._ptr


@functools.cache
def _smem_layout_3d(rows: int, width: int, dtype: torch.dtype):
    return gl.NVMMASharedLayout.get_default_for([1, rows, width], getattr(gl, _GL_DTYPES[dtype]))


def host_desc_to_end(t: torch.Tensor, rows: int, width: int):
    """A host-side descriptor over ``t``'s packed rows whose ``[rows, width]`` boxes stop at a sequence's end: the
    rows of a box at or past the end a kernel passes are zero-filled by TMA instead of holding the next sequence's
    rows (``tma_load_pair_walk`` loads through it). A 2-D descriptor over all rows cannot do that, and a kernel
    then zeroes those rows in shared memory (``zero_rows_from``) or builds a descriptor per sequence on the device
    (session 26: a cost per program).

    How: a 3-D view ``[z, y, x]`` with ``x`` the row's columns and both ``y`` (extent ``rows``, the box's own rows)
    and ``z`` (extent ``L + 1``) stepping one packed row, based ``rows`` rows before the first row: element
    ``(z, y, x)`` is packed row ``z + y - rows``. A box at ``y0 = rows - cnt``, ``z0 = row + cnt`` covers packed rows
    ``row ..`` with only its first ``cnt`` rows inside the ``y`` extent; TMA fills the rest with zeros and never
    reads their addresses. Every row a box reads is ``>= row >= 0`` and ``< end <= L``, so the shifted base (before
    the allocation) is never dereferenced. TMA takes the overlapping strides (CUTLASS's variable-length FMHA
    example uses the same two dimensions, an offset and a masking one)."""
    rs = t.stride(0)
    return TensorDescriptor(
        _RowsBefore(t, rows), [t.shape[0] + 1, rows, rs], [rs, rs, 1], [1, rows, width],
        _smem_layout_3d(rows, width, t.dtype),
    )  # fmt: skip


def walk_descs(t: torch.Tensor, rows: int, width: int, clip: int) -> tuple:
    """The two descriptors ``tma_load_pair_walk`` takes for a walked tensor under ``clip`` (0: 2-D only, 1: to the
    end only, 2: both); the unused one is None (a constexpr to the kernel)."""
    return (
        host_desc(t, rows, width) if clip != 1 else None,
        host_desc_to_end(t, rows, width) if clip else None,
    )


def walk_desc_sigs(clip: int, name_2d: str, name_end: str, dtype: torch.dtype, rows: int, width: int) -> dict:
    """``compile_sm90`` signature entries of a ``walk_descs`` pair (an unused one: ``"constexpr"``, see
    ``none_constexprs``)."""
    return {
        name_2d: desc_sig(dtype, rows, width) if clip != 1 else "constexpr",
        name_end: desc_sig(dtype, rows, width, to_end=True) if clip else "constexpr",
    }


def none_constexprs(sig: dict) -> dict:
    """The None values of a signature's ``"constexpr"`` entries (the unused descriptors of ``walk_desc_sigs``)."""
    return {name: None for name, ty in sig.items() if ty == "constexpr"}


def desc_sig(dtype: torch.dtype, rows: int, width: int, to_end: bool = False) -> str:
    """The signature string of a ``host_desc`` argument (``to_end``: of a ``host_desc_to_end`` one), for
    ``compile_sm90``."""
    if to_end:
        return f"tensordesc<{_SIG_DTYPES[dtype]}[1, {rows}, {width}],{_smem_layout_3d(rows, width, dtype)!r}>"
    return f"tensordesc<{_SIG_DTYPES[dtype]}[{rows}, {width}],{_smem_layout(rows, width, dtype)!r}>"


def compile_sm90(fn, signature: dict, constexprs: dict, num_warps: int):
    """Compile the Gluon kernel ``fn`` for sm_90 without a GPU; returns Triton's compiled kernel."""
    from triton.backends.compiler import GPUTarget
    from triton.experimental.gluon._runtime import GluonASTSource

    src = GluonASTSource(fn, signature, {**constexprs, "num_warps": num_warps})
    return triton.compile(src, target=GPUTarget("cuda", 90, 128), options={"num_warps": num_warps})
