"""Public entry point of softmax varlen attention: signature, validation, dispatch."""

from __future__ import annotations

import dataclasses
from typing import Any

import torch

from .._core import dispatch
from .._core.varlen import (
    FLOAT_DTYPES,
    check_bool,
    check_cu_seqlens,
    check_cu_values,
    check_float,
    check_int,
    check_same_device,
    check_same_dtype,
    check_tensor,
    resolve_max_seqlen,
)

FAMILY = "attention"


@dataclasses.dataclass
class AttentionInputs:
    """Validated arguments of one ``attention`` call. ``window`` already folds ``causal`` in."""

    q: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor
    cu_seqlens_q: torch.Tensor
    cu_seqlens_k: torch.Tensor
    max_seqlen_q: int
    max_seqlen_k: int
    causal: bool
    window: tuple[int, int]
    scale: float
    softcap: float
    deterministic: bool
    return_lse: bool

    # metadata used by not_supported_reasons (never tensor values)
    @property
    def device_type(self) -> str:
        return self.q.device.type

    @property
    def dtype(self) -> torch.dtype:
        return self.q.dtype

    @property
    def num_heads_q(self) -> int:
        return self.q.shape[1]

    @property
    def num_heads_kv(self) -> int:
        return self.k.shape[1]

    @property
    def head_dim(self) -> int:
        return self.q.shape[2]

    @property
    def head_dim_v(self) -> int:
        return self.v.shape[2]

    @property
    def batch_size(self) -> int:
        return self.cu_seqlens_q.shape[0] - 1

    @property
    def requires_grad(self) -> bool:
        return torch.is_grad_enabled() and any(t.requires_grad for t in (self.q, self.k, self.v))


def _check_window(window: Any) -> tuple[int, int]:
    if not isinstance(window, (tuple, list)) or len(window) != 2:
        raise TypeError(f"window: expected a (left, right) pair of ints, got {window!r}")
    left, right = window
    for side, val in (("left", left), ("right", right)):
        check_int(val, f"window[{side}]")
        if isinstance(val, int) and val < -1:
            raise ValueError(f"window: {side} must be -1 (unbounded) or >= 0, got {val}")
    return int(left), int(right)


def make_inputs(
    q: Any,
    k: Any,
    v: Any,
    cu_seqlens_q: Any,
    cu_seqlens_k: Any = None,
    max_seqlen_q: Any = None,
    max_seqlen_k: Any = None,
    *,
    causal: Any = False,
    window: Any = (-1, -1),
    scale: Any = None,
    softcap: Any = 0.0,
    deterministic: Any = False,
    return_lse: Any = False,
) -> AttentionInputs:
    """Validate every argument (metadata first, then cu_seqlens values where allowed)."""
    check_tensor(q, "q", ndim=3, dtypes=FLOAT_DTYPES)
    check_tensor(k, "k", ndim=3, dtypes=FLOAT_DTYPES)
    check_tensor(v, "v", ndim=3, dtypes=FLOAT_DTYPES)
    check_same_device("q", q, k=k, v=v)
    check_same_dtype("q", q, k=k, v=v)
    tq, hq, d = q.shape
    tk, hkv, dk = k.shape
    if v.shape[0] != tk or v.shape[1] != hkv:
        raise ValueError(
            f"v: shape {tuple(v.shape)} must be [Tk={tk}, Hkv={hkv}, Dv] to match k {tuple(k.shape)}"
        )
    if d == 0 or v.shape[2] == 0:
        raise ValueError(f"q/v: head dims must be positive, got D={d}, Dv={v.shape[2]}")
    if dk != d:
        raise ValueError(f"k: head dim {dk} must equal q's head dim {d}")
    if hq == 0 or hkv == 0:
        raise ValueError(f"q/k: head counts must be positive, got Hq={hq}, Hkv={hkv}")
    if hq % hkv != 0:
        raise ValueError(f"k: Hq={hq} must be a multiple of Hkv={hkv} (GQA/MQA)")
    for name, flag in (("causal", causal), ("deterministic", deterministic), ("return_lse", return_lse)):
        check_bool(flag, name)
    left, right = _check_window(window)
    if causal:
        right = 0
    # A side at least as long as every sequence bounds nothing (for every query i of every sequence,
    # left >= Tk > i + off and right >= Tq >= Lq > Lk - 1 - (i + off)): make it -1, so no backend
    # adds it to a position. The Triton kernels add the sides to int32 positions, and a large int32
    # side such as 2**31 - 1 used as "unbounded" overflowed there (wrong outputs). Metadata only.
    if isinstance(tk, int) and left >= max(tk, 1):
        left = -1
    if isinstance(tq, int) and right >= max(tq, 1):
        right = -1
    scale = d**-0.5 if scale is None else check_float(scale, "scale")
    softcap = check_float(softcap, "softcap")
    if softcap < 0:
        raise ValueError(f"softcap: must be >= 0 (0 disables it), got {softcap}")

    check_cu_seqlens(cu_seqlens_q, "cu_seqlens_q", total=tq, device=q.device)
    self_attention = cu_seqlens_k is None
    if self_attention:
        if tk != tq:
            raise ValueError(
                f"cu_seqlens_k: is None (self-attention) but k has {tk} rows and q has {tq}; pass cu_seqlens_k"
            )
        cu_seqlens_k = cu_seqlens_q
    else:
        check_cu_seqlens(cu_seqlens_k, "cu_seqlens_k", total=tk, device=q.device)
        if cu_seqlens_k.shape[0] != cu_seqlens_q.shape[0]:
            raise ValueError(
                f"cu_seqlens_k: has {cu_seqlens_k.shape[0]} entries but cu_seqlens_q has "
                f"{cu_seqlens_q.shape[0]}; both must be [B+1]"
            )
    max_seqlen_q = resolve_max_seqlen(cu_seqlens_q, max_seqlen_q, "max_seqlen_q", "cu_seqlens_q")
    if max_seqlen_k is None and self_attention:
        max_seqlen_k = max_seqlen_q
    max_seqlen_k = resolve_max_seqlen(cu_seqlens_k, max_seqlen_k, "max_seqlen_k", "cu_seqlens_k")
    # self-attention: the keys are the queries' sequences, so cu_seqlens_q's one pass checks the smaller bound (a
    # max_seqlen_k below the longest sequence is an error too; plain ints only: no guard on symbolic sizes)
    bound, bound_name = max_seqlen_q, "max_seqlen_q"
    if (
        self_attention
        and isinstance(max_seqlen_k, int)
        and isinstance(max_seqlen_q, int)
        and max_seqlen_k < bound
    ):
        bound, bound_name = max_seqlen_k, "max_seqlen_k"
    check_cu_values(cu_seqlens_q, "cu_seqlens_q", total=tq, max_seqlen=bound, max_name=bound_name)
    if not self_attention:
        check_cu_values(
            cu_seqlens_k, "cu_seqlens_k", total=tk, max_seqlen=max_seqlen_k, max_name="max_seqlen_k"
        )
    return AttentionInputs(
        q=q,
        k=k,
        v=v,
        cu_seqlens_q=cu_seqlens_q,
        cu_seqlens_k=cu_seqlens_k,
        max_seqlen_q=max_seqlen_q,
        max_seqlen_k=max_seqlen_k,
        causal=causal,
        window=(left, right),
        scale=scale,
        softcap=softcap,
        deterministic=deterministic,
        return_lse=return_lse,
    )


def attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    cu_seqlens_q: torch.Tensor,
    cu_seqlens_k: torch.Tensor | None = None,
    max_seqlen_q: int | None = None,
    max_seqlen_k: int | None = None,
    *,
    causal: bool = False,
    window: tuple[int, int] = (-1, -1),
    scale: float | None = None,
    softcap: float = 0.0,
    deterministic: bool = False,
    return_lse: bool = False,
    backend: str = "auto",
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    """Softmax attention over packed variable-length sequences (SPEC.md section 1).

    Args:
        q: ``[Tq, Hq, D]`` packed queries.
        k: ``[Tk, Hkv, D]`` packed keys; ``Hq % Hkv == 0`` (query head ``h`` reads kv head
            ``h // (Hq // Hkv)``, never expanded in memory).
        v: ``[Tk, Hkv, Dv]`` packed values.
        cu_seqlens_q: ``[B+1]`` int32/int64 offsets of the query sequences, on q's device.
        cu_seqlens_k: ``[B+1]`` offsets of the key sequences; ``None`` means ``cu_seqlens_q``.
        max_seqlen_q: longest query sequence (Python int). Omitted: computed from
            ``cu_seqlens_q``, one host-device sync. Must be an int under torch.compile.
        max_seqlen_k: longest key sequence, likewise.
        causal: mask keys after the query, aligned bottom-right (``off = Lk - Lq``).
        window: ``(left, right)`` sliding window, ``-1`` unbounded; ``causal`` sets ``right = 0``.
            A side at least as large as the rows of k (left) or q (right) bounds nothing and is
            read as ``-1``.
        scale: score scale, default ``D ** -0.5``.
        softcap: if ``> 0``, scores become ``softcap * tanh(s / softcap)``.
        deterministic: bit-identical gradients across runs (backends that cannot say so).
        return_lse: also return the natural-log logsumexp ``[Hq, Tq]`` fp32 (``-inf`` for rows
            with no visible key).
        backend: ``"auto"`` or a backend name (``jagattn.explain("attention", ...)`` lists them).

    Returns:
        ``o [Tq, Hq, Dv]`` in q's dtype, or ``(o, lse)`` with ``return_lse=True``. Rows with no
        visible key are zeros.

    Dtype: fp16, bf16 (every backend); fp32/fp64 (reference).

    Raises:
        TypeError / ValueError: a bad argument, named in the message, before any compute.
        NotSupportedError: the requested backend (or every backend) cannot run these inputs.
    """
    inputs = make_inputs(
        q,
        k,
        v,
        cu_seqlens_q,
        cu_seqlens_k,
        max_seqlen_q,
        max_seqlen_k,
        causal=causal,
        window=window,
        scale=scale,
        softcap=softcap,
        deterministic=deterministic,
        return_lse=return_lse,
    )
    impl = dispatch.select(FAMILY, inputs, backend)
    o, lse = impl(inputs)
    return (o, lse) if return_lse else o
