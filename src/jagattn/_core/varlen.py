"""Argument validation shared by the families: tensors, the packed layout and ``cu_seqlens``.

Metadata checks (type, rank, dtype, device, strides, sizes) always run and never sync. Value
checks on ``cu_seqlens`` (starts at 0, non-decreasing, ends at the total, longest sequence within
``max_seqlen``) read the tensor: they always run for CPU tensors, and for GPU tensors only when
``JAGATTN_CHECK_INPUTS=1`` because reading a GPU tensor is a host-device sync. Without them the
GPU kernels still never read or write out of bounds (they clamp to the real lengths), but a wrong
``cu_seqlens`` or a too-small ``max_seqlen`` gives wrong results instead of an error.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import torch

from .env import env_flag

INT32_MAX = 2**31 - 1
FLOAT_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
INDEX_DTYPES = (torch.int32, torch.int64)


def _dtype_names(dtypes: Iterable[torch.dtype]) -> str:
    return ", ".join(str(d).replace("torch.", "") for d in dtypes)


def value_checks_enabled(t: torch.Tensor) -> bool:
    """Whether value checks on ``t`` run: always on CPU, on GPU only with JAGATTN_CHECK_INPUTS=1."""
    if _is_tracing(t):
        return False
    if t.device.type == "cpu":
        return True
    return env_flag("JAGATTN_CHECK_INPUTS", False)


try:  # imported by ``import torch`` already; once here rather than on every call
    from torch._subclasses.fake_tensor import FakeTensor as _FakeTensor
except ImportError:  # pragma: no cover
    _FakeTensor = None


def _is_tracing(t: torch.Tensor) -> bool:
    if torch.compiler.is_compiling():
        return True
    if _FakeTensor is not None and isinstance(t, _FakeTensor):
        return True
    return t.device.type == "meta"


def check_tensor(
    t: Any,
    name: str,
    *,
    ndim: int | Sequence[int] | None = None,
    dtypes: Sequence[torch.dtype] | None = None,
    last_dim_contiguous: bool = True,
) -> torch.Tensor:
    """Type, rank, dtype and stride checks of one tensor argument; returns it unchanged."""
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name}: expected a torch.Tensor, got {type(t).__name__}")
    if ndim is not None:
        allowed = (ndim,) if isinstance(ndim, int) else tuple(ndim)
        if t.dim() not in allowed:
            want = " or ".join(str(a) for a in allowed)
            raise ValueError(f"{name}: expected {want} dims, got {t.dim()} (shape {tuple(t.shape)})")
    if dtypes is not None and t.dtype not in dtypes:
        raise ValueError(f"{name}: dtype {t.dtype} is not supported; expected one of {_dtype_names(dtypes)}")
    if last_dim_contiguous and t.dim() > 0 and t.shape[-1] > 1 and t.stride(-1) != 1:
        raise ValueError(
            f"{name}: the last dim must be contiguous (stride 1), got strides {tuple(t.stride())}; "
            f"call .contiguous() on it"
        )
    return t


def check_same_device(ref_name: str, ref: torch.Tensor, **others: torch.Tensor | None) -> None:
    for name, t in others.items():
        if t is not None and t.device != ref.device:
            raise ValueError(
                f"{name}: is on {t.device} but {ref_name} is on {ref.device}; move them together"
            )


def check_same_dtype(ref_name: str, ref: torch.Tensor, **others: torch.Tensor | None) -> None:
    for name, t in others.items():
        if t is not None and t.dtype != ref.dtype:
            raise ValueError(
                f"{name}: dtype {t.dtype} differs from {ref_name}'s {ref.dtype}; cast them to one dtype"
            )


def check_dim(name: str, got: int, want: int, what: str) -> None:
    if got != want:
        raise ValueError(f"{name}: {what} must be {want}, got {got}")


def check_bool(value: Any, name: str) -> bool:
    """A Python bool flag (ints such as 0/1 are rejected: they usually mean a misplaced argument)."""
    if not isinstance(value, bool):
        raise TypeError(f"{name}: expected a bool, got {type(value).__name__} ({value!r})")
    return value


def accumulation_dtype(dtype: torch.dtype) -> torch.dtype:
    """The references accumulate in fp32, or fp64 when the inputs are fp64."""
    return torch.float64 if dtype == torch.float64 else torch.float32


def check_int(value: Any, name: str, *, minimum: int | None = None, allow_none: bool = False) -> int | None:
    """A Python int argument (bool rejected; SymInt accepted under tracing)."""
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, torch.SymInt)):
        raise TypeError(f"{name}: expected an int, got {type(value).__name__} ({value!r})")
    if minimum is not None and isinstance(value, int) and value < minimum:
        raise ValueError(f"{name}: must be >= {minimum}, got {value}")
    return value


def check_float(value: Any, name: str, *, allow_none: bool = False, finite: bool = True) -> float | None:
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name}: expected a float, got {type(value).__name__} ({value!r})")
    value = float(value)
    if finite and not (value == value and abs(value) != float("inf")):
        raise ValueError(f"{name}: must be finite, got {value}")
    return value


def check_cu_seqlens(cu: Any, name: str, *, total: int, device: torch.device) -> torch.Tensor:
    """Metadata checks of a ``cu_seqlens`` tensor ``[B+1]`` that indexes ``total`` packed rows."""
    if not isinstance(cu, torch.Tensor):
        raise TypeError(f"{name}: expected a 1-D int32/int64 torch.Tensor, got {type(cu).__name__}")
    if cu.dim() != 1:
        raise ValueError(f"{name}: expected 1 dim [B+1], got {cu.dim()} dims (shape {tuple(cu.shape)})")
    if cu.dtype not in INDEX_DTYPES:
        raise ValueError(f"{name}: dtype must be int32 or int64, got {cu.dtype}")
    if cu.numel() < 1:
        raise ValueError(f"{name}: must have at least one element (B+1 with B >= 0), got an empty tensor")
    check_index_contiguous(cu, name)
    if cu.device != device:
        raise ValueError(f"{name}: is on {cu.device} but the packed tensors are on {device}")
    if isinstance(total, int) and total > INT32_MAX:
        raise ValueError(f"{name}: total rows {total} overflow int32 offsets (max {INT32_MAX})")
    return cu


def check_index_contiguous(t: torch.Tensor, name: str) -> None:
    """A 1-D index tensor (offsets, counts) must have stride 1: the kernels read element ``b`` at
    ``ptr + b`` (a strided view such as ``cu[::2]`` read the wrong values and corrupted memory)."""
    # stride first: a contiguous tensor never reaches the (possibly symbolic) size test
    if t.dim() == 1 and t.stride(0) != 1 and t.shape[0] > 1:
        raise ValueError(
            f"{name}: must be contiguous (stride 1), got stride {t.stride(0)}; call .contiguous() on it"
        )


def check_cu_values(
    cu: torch.Tensor,
    name: str,
    *,
    total: int,
    max_seqlen: int | None = None,
    max_name: str = "max_seqlen",
) -> torch.Tensor | None:
    """Value checks of ``cu_seqlens`` (a sync on GPU; see the module docstring for when they run).

    Returns the ``[B]`` sequence lengths it read (int64, on the CPU) for a family's own value checks, or
    None when the checks do not run."""
    if not value_checks_enabled(cu):
        return None
    vals = cu.detach().to("cpu", torch.int64)
    # few ops: each one on these small CPU tensors costs microseconds (the first bad index only on failure)
    first, last = int(vals[0]), int(vals[-1])
    if first != 0:
        raise ValueError(f"{name}: must start at 0, got {name}[0] = {first}")
    longest = 0
    if vals.numel() > 1:
        diffs = vals.diff()
        shortest, longest = (int(x) for x in torch.aminmax(diffs))
        if shortest < 0:
            i = int(torch.nonzero(diffs < 0)[0, 0])
            raise ValueError(
                f"{name}: must be non-decreasing, got {name}[{i}] = {int(vals[i])} > {name}[{i + 1}] = {int(vals[i + 1])}"
            )
    if last != total:
        raise ValueError(f"{name}: last value {last} must equal the number of packed rows {total}")
    if max_seqlen is not None and isinstance(max_seqlen, int) and vals.numel() > 1 and longest > max_seqlen:
        raise ValueError(
            f"{max_name}: {max_seqlen} is smaller than the longest sequence in {name} ({longest})"
        )
    return diffs if vals.numel() > 1 else vals[:0]


def resolve_max_seqlen(cu: torch.Tensor, max_seqlen: Any, name: str, cu_name: str) -> int:
    """Validate a user ``max_seqlen`` or compute it from ``cu_seqlens`` (one device sync)."""
    if max_seqlen is not None:
        check_int(max_seqlen, name, minimum=0)
        return max_seqlen
    if cu.numel() <= 1:
        return 0
    if _is_tracing(cu):
        raise ValueError(
            f"{name}: must be passed as an int under torch.compile/export (computing it from {cu_name} "
            f"reads a tensor value)"
        )
    return int((cu[1:] - cu[:-1]).max().item())


def seq_lengths(cu: torch.Tensor) -> list[int]:
    """Python list of sequence lengths (reads the tensor)."""
    vals = cu.detach().to("cpu", torch.int64).tolist()
    return [b - a for a, b in zip(vals[:-1], vals[1:], strict=False)]


def cu_seqlens_from_lengths(
    lengths: Sequence[int], device: torch.device | str = "cpu", dtype: torch.dtype = torch.int32
) -> torch.Tensor:
    """``[0, l0, l0+l1, ...]`` as a tensor on ``device``."""
    out = [0]
    for n in lengths:
        if n < 0:
            raise ValueError(f"lengths: negative length {n}")
        out.append(out[-1] + int(n))
    return torch.tensor(out, dtype=dtype, device=device)
