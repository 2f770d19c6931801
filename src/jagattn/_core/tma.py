"""Device-side TMA descriptors (``tl.make_tensor_descriptor``): when a kernel may load a tensor through them.

Shared by every kernel family that loads tiles through descriptors (attention forward K/V, dQ K/V, dK/dV q/dO;
HSTU dK/dV q/dO). A descriptor needs Triton's scratch allocator, a per-thread ContextVar: autograd's backward
thread and user threads start without one, so ``scratch_allocator_ready`` installs a ``torch.empty`` allocator
in the calling thread when none is set (never replacing the caller's). Call the check in the thread that
launches.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from .triton_utils import interpreter_enabled

try:  # the scratch allocator of device-side TMA descriptors
    from triton.runtime import _allocation
except ImportError:  # pragma: no cover - other Triton layouts: no TMA
    _allocation = None


def _scratch(size: int, alignment: int, stream) -> torch.Tensor:
    return torch.empty(size, dtype=torch.int8, device="cuda")


def scratch_allocator_ready() -> bool:
    """Install our scratch allocator in the calling thread when none is set; False (no TMA) where this Triton
    has no such allocator to inspect."""
    if _allocation is None:
        return False
    current = getattr(_allocation, "_allocator", None)
    null = getattr(_allocation, "NullAllocator", None)
    if current is None or null is None or not hasattr(triton, "set_allocator"):
        return False
    if isinstance(current.get(), null):
        triton.set_allocator(_scratch)
    return True


def tma_loads_ok(*tensors: torch.Tensor) -> bool:
    """Whether tiles of ``tensors`` may come through device-side TMA descriptors: eager calls on a CUDA device,
    each tensor with a contiguous last dim, 16-byte aligned base pointer and strides, and rows of at least 16
    bytes (TMA's constraints), a Triton with ``tl.make_tensor_descriptor`` and its scratch allocator (installed
    in the calling thread). Never under torch.compile / export / opcheck (fake tensors have no data pointer to
    check; the pointer loads run there) nor the interpreter. Callers add their own layout rules (e.g. which
    rows or heads one descriptor may span)."""
    if not tensors or not tensors[0].is_cuda or interpreter_enabled() or torch.compiler.is_compiling():
        return False
    if not hasattr(tl, "make_tensor_descriptor"):
        return False
    try:  # fake / functional tensors (Inductor's lowering of the op, opcheck, export) have no data pointer
        ptrs = [t.data_ptr() for t in tensors]
    except RuntimeError:
        return False
    for t, ptr in zip(tensors, ptrs, strict=True):
        es = t.element_size()
        if t.stride(-1) != 1 or ptr % 16 or t.shape[-1] * es < 16:
            return False
        if any((s * es) % 16 for s in t.stride()[:-1]):
            return False
    return scratch_allocator_ready()
