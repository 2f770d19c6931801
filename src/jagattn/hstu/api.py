"""Public entry points of HSTU pointwise attention (SPEC.md section 2): signature, validation, dispatch.

``hstu_attention`` (training: forward and backward) and ``hstu_attention_cached`` (KV-cached
inference: the last ``Δ`` query rows of every sequence, forward only) share one validation
function, :func:`make_inputs`, and one backend family, ``"hstu"``; the :class:`HstuInputs` say
which call it is (``cached``).

Choices made here where SPEC.md is silent:

- ``max_seq_len`` has no default (as in SPEC) but ``None`` is accepted: it is then computed from
  ``seq_offsets`` (one host-device sync; an error under torch.compile/export). The divisor ``S``
  is ``scaling_seqlen`` if given, else this ``max_seq_len``, so the batch's *declared* maximum
  (not the longest real sequence) sets the scale.
- ``max_seq_len`` must be ``>= 1`` whenever the batch has any token (metadata check), and
  ``total_tokens <= B * max_seq_len`` is checked without reading a tensor. That the longest
  sequence fits in ``max_seq_len`` is a value check (CPU always, GPU with ``JAGATTN_CHECK_INPUTS=1``).
- ``num_targets`` is a ``[B]`` int32/int64 tensor on the device of ``q`` with ``0 <= T_b <= n_b``
  (value check, same policy). ``num_targets`` of all zeros gives the same mask as ``None``.
- When a sequence has fewer than ``C`` non-target tokens (``n_b - T_b < C``) the id formula of
  SPEC section 2 is applied literally (``M = U - C + 1 <= 0``); the mask then degenerates (for
  example a contextual row of a sequence shorter than ``C - 1`` tokens sees only itself). This is
  allowed, not rejected, and every backend must follow the formula.
- ``hstu_attention_cached``: ``Δ = delta_q.shape[0] // B`` and ``delta_q.shape[0]`` must be a
  multiple of ``B``; with ``B == 0`` it must have 0 rows (``Δ = 0``). ``Δ = 0`` (no query rows)
  is legal and returns an empty output. ``n_b >= Δ`` is a value check; ``Δ <= max_seq_len`` is
  checked always. ``deterministic`` is accepted and ignored (there is no backward).
- ``alpha`` may be any finite float (zero and negative included).
- Empty ``[0, H, D]`` tensors and ``B == 0`` are legal; every head count and head dim must be >= 1.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import torch

from .._core import dispatch
from .._core.varlen import (
    FLOAT_DTYPES,
    INDEX_DTYPES,
    check_bool,
    check_cu_seqlens,
    check_cu_values,
    check_float,
    check_index_contiguous,
    check_int,
    check_same_device,
    check_same_dtype,
    check_tensor,
    resolve_max_seqlen,
)

FAMILY = "hstu"


@dataclasses.dataclass
class HstuInputs:
    """Validated arguments of one ``hstu_attention`` or ``hstu_attention_cached`` call.

    ``q`` is the full ``[L, H, Dq]`` queries, or ``delta_q [B*Δ, H, Dq]`` when ``cached``.
    """

    q: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor
    seq_offsets: torch.Tensor
    max_seq_len: int
    alpha: float
    num_targets: torch.Tensor | None
    contextual_seq_len: int
    max_attn_len: int
    min_full_attn_seq_len: int
    scaling_seqlen: int | None
    deterministic: bool
    cached: bool = False
    delta: int = 0

    # metadata used by not_supported_reasons (never tensor values)
    @property
    def device_type(self) -> str:
        return self.q.device.type

    @property
    def dtype(self) -> torch.dtype:
        return self.q.dtype

    @property
    def num_heads(self) -> int:
        return self.q.shape[1]

    @property
    def head_dim(self) -> int:
        return self.q.shape[2]

    @property
    def head_dim_v(self) -> int:
        return self.v.shape[2]

    @property
    def batch_size(self) -> int:
        return self.seq_offsets.shape[0] - 1

    @property
    def total_tokens(self) -> int:
        return self.k.shape[0]

    @property
    def has_targets(self) -> bool:
        return self.num_targets is not None

    @property
    def scale_len(self) -> int:
        """``S``, the divisor of SPEC section 2: ``scaling_seqlen`` if given else ``max_seq_len``."""
        return self.scaling_seqlen if self.scaling_seqlen is not None else self.max_seq_len

    @property
    def inv_scale_len(self) -> float:
        """``1 / S`` (0 when ``S == 0``, which only happens for a batch without tokens)."""
        s = self.scale_len
        return 1.0 / s if s > 0 else 0.0

    @property
    def requires_grad(self) -> bool:
        return torch.is_grad_enabled() and any(t.requires_grad for t in (self.q, self.k, self.v))


def _check_num_targets(num_targets: Any, batch: int, device: torch.device) -> torch.Tensor | None:
    if num_targets is None:
        return None
    if not isinstance(num_targets, torch.Tensor):
        raise TypeError(
            f"num_targets: expected a [B] int32/int64 torch.Tensor or None, got {type(num_targets).__name__}"
        )
    if num_targets.dim() != 1 or num_targets.shape[0] != batch:
        raise ValueError(
            f"num_targets: expected shape [B] = [{batch}] (B + 1 = {batch + 1} entries in seq_offsets), "
            f"got {tuple(num_targets.shape)}"
        )
    if num_targets.dtype not in INDEX_DTYPES:
        raise ValueError(f"num_targets: dtype must be int32 or int64, got {num_targets.dtype}")
    if num_targets.device != device:
        raise ValueError(f"num_targets: is on {num_targets.device} but the packed tensors are on {device}")
    check_index_contiguous(num_targets, "num_targets")
    return num_targets


def _check_values(
    lens: torch.Tensor | None, num_targets: torch.Tensor | None, delta: int | None, cached: bool
) -> None:
    """Value checks of num_targets (0 <= T_b <= n_b) and of n_b >= Δ (CPU always, GPU opt-in), on the
    sequence lengths ``check_cu_values`` returned (None: the value checks do not run)."""
    if lens is None:
        return
    # reductions first, the first bad sequence only on failure: each op on these small CPU tensors costs
    # microseconds (session 31: ~30 us per CPU call before, the lengths computed a second time)
    if num_targets is not None and num_targets.numel():
        t = num_targets.detach().to("cpu", torch.int64)
        if int(t.min()) < 0 or int((t - lens).max()) > 0:
            b = int(torch.nonzero((t < 0) | (t > lens))[0, 0])
            raise ValueError(
                f"num_targets: num_targets[{b}] = {int(t[b])} must be in [0, n_b] where n_b = {int(lens[b])} "
                f"is the length of sequence {b}"
            )
    if cached and delta is not None and lens.numel() and int(lens.min()) < delta:
        b = int(torch.nonzero(lens < delta)[0, 0])
        raise ValueError(
            f"delta_q: holds Δ = {delta} rows per sequence but sequence {b} has only {int(lens[b])} tokens "
            f"(every n_b must be >= Δ)"
        )


def make_inputs(
    q: Any,
    k: Any,
    v: Any,
    seq_offsets: Any,
    max_seq_len: Any,
    *,
    alpha: Any,
    num_targets: Any = None,
    contextual_seq_len: Any = 0,
    max_attn_len: Any = 0,
    min_full_attn_seq_len: Any = 0,
    scaling_seqlen: Any = None,
    deterministic: Any = False,
    cached: bool = False,
) -> HstuInputs:
    """Validate every argument of either call; ``cached=True`` reads ``q`` as ``delta_q [B*Δ, H, Dq]``.

    Metadata checks come first (never a sync); value checks of ``seq_offsets`` / ``num_targets``
    follow, on CPU always and on GPU only with ``JAGATTN_CHECK_INPUTS=1``.
    """
    qname = "delta_q" if cached else "q"
    check_tensor(q, qname, ndim=3, dtypes=FLOAT_DTYPES)
    check_tensor(k, "k", ndim=3, dtypes=FLOAT_DTYPES)
    check_tensor(v, "v", ndim=3, dtypes=FLOAT_DTYPES)
    check_same_device(qname, q, k=k, v=v)
    check_same_dtype(qname, q, k=k, v=v)
    lq, h, dq = q.shape
    lk, hk, dk = k.shape
    if hk != h or dk != dq:
        raise ValueError(
            f"k: shape {tuple(k.shape)} must be [L, H={h}, Dq={dq}] to match {qname} {tuple(q.shape)}"
        )
    if v.shape[0] != lk or v.shape[1] != h:
        raise ValueError(f"v: shape {tuple(v.shape)} must be [L={lk}, H={h}, Dv] to match k {tuple(k.shape)}")
    if h == 0:
        raise ValueError(f"{qname}: the number of heads must be positive, got H={h}")
    if dq == 0:
        raise ValueError(f"{qname}: head dim Dq must be positive, got {dq}")
    if v.shape[2] == 0:
        raise ValueError(f"v: head dim Dv must be positive, got {v.shape[2]}")
    if not cached and lq != lk:
        raise ValueError(f"q: has {lq} rows but k has {lk}; q, k and v must hold the same packed tokens")

    alpha = check_float(alpha, "alpha")
    contextual_seq_len = check_int(contextual_seq_len, "contextual_seq_len", minimum=0)
    max_attn_len = check_int(max_attn_len, "max_attn_len", minimum=0)
    min_full_attn_seq_len = check_int(min_full_attn_seq_len, "min_full_attn_seq_len", minimum=0)
    scaling_seqlen = check_int(scaling_seqlen, "scaling_seqlen", minimum=1, allow_none=True)
    deterministic = check_bool(deterministic, "deterministic")

    check_cu_seqlens(seq_offsets, "seq_offsets", total=lk, device=k.device)
    batch = seq_offsets.shape[0] - 1
    num_targets = _check_num_targets(num_targets, batch, k.device)
    max_seq_len = resolve_max_seqlen(seq_offsets, max_seq_len, "max_seq_len", "seq_offsets")
    if isinstance(max_seq_len, int) and isinstance(lk, int) and lk > batch * max_seq_len:
        raise ValueError(
            f"max_seq_len: {max_seq_len} is too small: {batch} sequences of at most {max_seq_len} tokens "
            f"cannot hold the {lk} packed rows of k"
        )

    delta = 0
    if cached:
        if batch == 0:
            if lq != 0:
                raise ValueError(
                    f"delta_q: seq_offsets holds 0 sequences but delta_q has {lq} rows (must be 0)"
                )
        else:
            if lq % batch != 0:
                raise ValueError(
                    f"delta_q: {lq} rows is not a multiple of the batch size B = {batch} "
                    f"of seq_offsets (delta_q must be [B*Δ, H, Dq] with one uniform Δ)"
                )
            delta = lq // batch
        if isinstance(max_seq_len, int) and delta > max_seq_len:
            raise ValueError(f"delta_q: Δ = {delta} rows per sequence exceeds max_seq_len = {max_seq_len}")

    lens = check_cu_values(
        seq_offsets, "seq_offsets", total=lk, max_seqlen=max_seq_len, max_name="max_seq_len"
    )
    _check_values(lens, num_targets, delta, cached)
    return HstuInputs(
        q=q,
        k=k,
        v=v,
        seq_offsets=seq_offsets,
        max_seq_len=max_seq_len,
        alpha=alpha,
        num_targets=num_targets,
        contextual_seq_len=contextual_seq_len,
        max_attn_len=max_attn_len,
        min_full_attn_seq_len=min_full_attn_seq_len,
        scaling_seqlen=scaling_seqlen,
        deterministic=deterministic,
        cached=cached,
        delta=delta,
    )


def hstu_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    seq_offsets: torch.Tensor,
    max_seq_len: int | None,
    *,
    alpha: float,
    num_targets: torch.Tensor | None = None,
    contextual_seq_len: int = 0,
    max_attn_len: int = 0,
    min_full_attn_seq_len: int = 0,
    scaling_seqlen: int | None = None,
    deterministic: bool = False,
    backend: str = "auto",
) -> torch.Tensor:
    """HSTU pointwise attention over packed sequences (SPEC.md section 2).

    ``o_i = sum_j m_ij * silu(alpha * <q_i, k_j>) / S * v_j`` with ``S = scaling_seqlen`` if
    given, else ``max_seq_len``, and the target / contextual / window mask ``m`` of SPEC section 2.

    Args:
        q: ``[L, H, Dq]`` packed queries.
        k: ``[L, H, Dq]`` packed keys.
        v: ``[L, H, Dv]`` packed values (``Dv`` may differ from ``Dq``).
        seq_offsets: ``[B+1]`` int32/int64 offsets (as ``cu_seqlens``), on q's device.
        max_seq_len: Python int ``>=`` the longest sequence; also the default divisor ``S``.
            ``None``: computed from ``seq_offsets`` (one sync; not allowed under torch.compile).
        alpha: score scale inside the SiLU (finite float).
        num_targets: ``[B]`` int tensor: the last ``num_targets[b]`` tokens of sequence ``b`` are
            targets (each sees all history and itself, no other target). ``None``: no targets.
        contextual_seq_len: ``C``, the first ``C`` tokens of every sequence are contextual.
        max_attn_len: ``W``, window in id space (0 = no window).
        min_full_attn_seq_len: ``F``, with a window: the last ``F`` history rows and all targets
            ignore the window.
        scaling_seqlen: divisor ``S`` independent of the batch (default: ``max_seq_len``).
        deterministic: bit-identical gradients across runs. The Triton backend's default backward
            already is (its dQ kernel); ``deterministic=True`` also forbids the opt-in atomic dQ
            (``JAGATTN_HSTU_ATOMIC_DQ=1``).
        backend: ``"auto"`` or a backend name (``jagattn.explain("hstu", ...)`` lists them).

    Returns:
        ``o [L, H, Dv]`` in q's dtype.

    Dtype: fp16, bf16 (every backend); fp32/fp64 (reference).

    Raises:
        TypeError / ValueError: a bad argument, named in the message, before any compute.
        NotSupportedError: the requested backend (or every backend) cannot run these inputs.
    """
    inputs = make_inputs(
        q,
        k,
        v,
        seq_offsets,
        max_seq_len,
        alpha=alpha,
        num_targets=num_targets,
        contextual_seq_len=contextual_seq_len,
        max_attn_len=max_attn_len,
        min_full_attn_seq_len=min_full_attn_seq_len,
        scaling_seqlen=scaling_seqlen,
        deterministic=deterministic,
    )
    impl = dispatch.select(FAMILY, inputs, backend)
    return impl(inputs)


def hstu_attention_cached(
    delta_q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    seq_offsets: torch.Tensor,
    max_seq_len: int | None,
    *,
    alpha: float,
    num_targets: torch.Tensor | None = None,
    contextual_seq_len: int = 0,
    max_attn_len: int = 0,
    min_full_attn_seq_len: int = 0,
    scaling_seqlen: int | None = None,
    deterministic: bool = False,
    backend: str = "auto",
) -> torch.Tensor:
    """HSTU attention of the last ``Δ`` query rows of every sequence (KV-cached inference).

    Output row ``b*Δ + r`` equals row ``n_b - Δ + r`` of :func:`hstu_attention` over the full
    sequences with the same mask and scale. Forward only (use it under ``torch.no_grad()``).

    Args:
        delta_q: ``[B*Δ, H, Dq]``: the last ``Δ`` query rows of every sequence, sequence-major;
            one uniform ``Δ`` with ``n_b >= Δ``.
        k: ``[L, H, Dq]`` full packed keys.
        v: ``[L, H, Dv]`` full packed values.
        seq_offsets, max_seq_len, alpha, num_targets, contextual_seq_len, max_attn_len,
            min_full_attn_seq_len, scaling_seqlen, deterministic, backend: as in
            :func:`hstu_attention` (``deterministic`` has no effect: there is no backward).

    Returns:
        ``o [B*Δ, H, Dv]`` in delta_q's dtype.

    Dtype: fp16, bf16 (every backend); fp32/fp64 (reference).

    Raises:
        TypeError / ValueError: a bad argument, named in the message, before any compute.
        NotSupportedError: the requested backend (or every backend) cannot run these inputs.
    """
    inputs = make_inputs(
        delta_q,
        k,
        v,
        seq_offsets,
        max_seq_len,
        alpha=alpha,
        num_targets=num_targets,
        contextual_seq_len=contextual_seq_len,
        max_attn_len=max_attn_len,
        min_full_attn_seq_len=min_full_attn_seq_len,
        scaling_seqlen=scaling_seqlen,
        deterministic=deterministic,
        cached=True,
    )
    impl = dispatch.select(FAMILY, inputs, backend)
    return impl(inputs)
