"""Public entry point of the gated delta rule (SPEC.md section 3): signature, validation, dispatch.

Choices made here where SPEC.md is silent:

- **4-D with ``cu_seqlens``.** A 4-D batch ``[B, T, H, K]`` normally describes ``B`` sequences
  of length ``T`` and takes no ``cu_seqlens``. Like flash-linear-attention, a 4-D input with
  ``B == 1`` *and* ``cu_seqlens`` is accepted and read as the packed layout ``[T, ...]``; the
  output keeps the leading ``1``. ``B > 1`` together with ``cu_seqlens`` is a ``ValueError``.
- **Dtypes.** ``q``, ``k``, ``v`` share one float dtype (fp16, bf16, fp32; fp64 for the
  reference only). ``g``, ``gk`` and ``beta`` may be any float dtype (read as fp32, or fp64 when
  ``q`` is fp64). ``initial_state`` must be fp32, or fp64 when ``q`` is fp64 (fp64 is the
  gradcheck path of the reference): a half-precision state is rejected rather than silently
  widened, because a state rounded to 8 mantissa bits is not the state the caller thinks it is.
- **Output dtypes.** ``o`` has ``v``'s (= ``q``'s) dtype; ``final_state`` is fp32, fp64 when the
  inputs are fp64.
- **Value checks.** ``cu_seqlens`` values are checked on CPU always and on GPU only with
  ``JAGATTN_CHECK_INPUTS=1`` (see :mod:`jagattn._core.varlen`). Gate values (``g <= 0``) are
  never checked: positive gates are legal math, only numerically unwise.
- **Empty inputs.** ``T == 0`` and empty sequences are legal: an empty sequence's final state
  is its initial state (zeros without one). ``N == 0`` sequences (``cu_seqlens == [0]``) is legal
  and returns a ``[0, HV, K, V]`` final state.
- ``K`` must be in ``1..256`` (SPEC); ``V`` any positive size.
"""

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
    check_same_device,
    check_same_dtype,
    check_tensor,
)

FAMILY = "gated_delta"
MAX_HEAD_DIM_K = 256
QKV_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


@dataclasses.dataclass
class GatedDeltaInputs:
    """Validated arguments of one ``gated_delta_rule`` call, always in the packed layout.

    A 4-D call is flattened to ``[B*T, ...]`` with a synthesized ``cu_seqlens`` and
    ``batch_shape = (B, T)`` so the outputs can be reshaped back; ``seq_len`` is then the common
    length ``T`` (known without reading ``cu_seqlens``), else ``None``.
    """

    q: torch.Tensor  # [T, H, K]
    k: torch.Tensor  # [T, H, K]
    v: torch.Tensor  # [T, HV, V]
    g: torch.Tensor  # [T, HV]
    beta: torch.Tensor  # [T, HV]
    gk: torch.Tensor | None  # [T, HV, K]
    initial_state: torch.Tensor | None  # [N, HV, K, V]
    cu_seqlens: torch.Tensor  # [N+1]
    scale: float
    output_final_state: bool
    use_qk_l2norm: bool
    batch_shape: tuple[int, int] | None = None
    seq_len: int | None = None

    # metadata used by not_supported_reasons (never tensor values)
    @property
    def device_type(self) -> str:
        return self.q.device.type

    @property
    def dtype(self) -> torch.dtype:
        return self.q.dtype

    @property
    def total_tokens(self) -> int:
        return self.q.shape[0]

    @property
    def num_heads(self) -> int:
        return self.q.shape[1]

    @property
    def num_value_heads(self) -> int:
        return self.v.shape[1]

    @property
    def head_dim_k(self) -> int:
        return self.q.shape[2]

    @property
    def head_dim_v(self) -> int:
        return self.v.shape[2]

    @property
    def num_seqs(self) -> int:
        return self.cu_seqlens.shape[0] - 1

    @property
    def has_gk(self) -> bool:
        return self.gk is not None

    @property
    def has_initial_state(self) -> bool:
        return self.initial_state is not None

    @property
    def is_batched(self) -> bool:
        return self.batch_shape is not None

    @property
    def state_dtype(self) -> torch.dtype:
        return torch.float64 if self.q.dtype == torch.float64 else torch.float32

    def tensors(self) -> tuple[torch.Tensor, ...]:
        ts = [self.q, self.k, self.v, self.g, self.beta]
        ts += [t for t in (self.gk, self.initial_state) if t is not None]
        return tuple(ts)

    @property
    def requires_grad(self) -> bool:
        return torch.is_grad_enabled() and any(t.requires_grad for t in self.tensors())


def _shape_error(name: str, t: torch.Tensor, want: str) -> ValueError:
    return ValueError(f"{name}: shape {tuple(t.shape)} must be {want}")


def make_inputs(
    q: Any,
    k: Any,
    v: Any,
    g: Any,
    beta: Any,
    *,
    cu_seqlens: Any = None,
    scale: Any = None,
    initial_state: Any = None,
    output_final_state: Any = False,
    use_qk_l2norm: Any = False,
    gk: Any = None,
) -> GatedDeltaInputs:
    """Validate every argument (metadata first, then ``cu_seqlens`` values where allowed)."""
    check_tensor(q, "q", ndim=(3, 4), dtypes=QKV_DTYPES)
    batched = q.dim() == 4
    nd = q.dim()
    check_tensor(k, "k", ndim=nd, dtypes=QKV_DTYPES)
    check_tensor(v, "v", ndim=nd, dtypes=QKV_DTYPES)
    check_tensor(g, "g", ndim=nd - 1, dtypes=FLOAT_DTYPES)
    check_tensor(beta, "beta", ndim=nd - 1, dtypes=FLOAT_DTYPES)
    if gk is not None:
        check_tensor(gk, "gk", ndim=nd, dtypes=FLOAT_DTYPES)
    if initial_state is not None:
        check_tensor(initial_state, "initial_state", ndim=4, dtypes=FLOAT_DTYPES)
    check_same_device("q", q, k=k, v=v, g=g, beta=beta, gk=gk, initial_state=initial_state)
    check_same_dtype("q", q, k=k, v=v)
    check_bool(output_final_state, "output_final_state")
    check_bool(use_qk_l2norm, "use_qk_l2norm")

    lead = tuple(q.shape[:-2])  # (T,) or (B, T)
    h, dk = q.shape[-2], q.shape[-1]
    lead_s = ", ".join(("B", "T")[: len(lead)] if batched else ("T",))
    if tuple(k.shape) != tuple(q.shape):
        raise _shape_error("k", k, f"[{lead_s}, H, K] = {list(q.shape)} like q")
    if tuple(v.shape[:-2]) != lead:
        # the message is built only here: dynamo cannot trace str() of a symbolic size (every call broke
        # torch.compile with dynamic shapes before session 46)
        lead_v = ", ".join(str(x) for x in lead)
        raise _shape_error("v", v, f"[{lead_s}, HV, V] with [{lead_s}] = [{lead_v}] like q")
    hv, dv = v.shape[-2], v.shape[-1]
    if h == 0 or hv == 0:
        raise ValueError(f"q/v: head counts must be positive, got H={h}, HV={hv}")
    if hv % h != 0:
        raise ValueError(f"v: HV={hv} value heads must be a multiple of H={h} q/k heads (GVA)")
    if not 1 <= dk <= MAX_HEAD_DIM_K:
        raise ValueError(f"q: head dim K={dk} must be in 1..{MAX_HEAD_DIM_K}")
    if dv == 0:
        raise ValueError(f"v: head dim V must be positive, got {dv}")
    if tuple(g.shape) != lead + (hv,):
        raise _shape_error("g", g, f"[{lead_s}, HV] = {list(lead + (hv,))}")
    if tuple(beta.shape) != lead + (hv,):
        raise _shape_error("beta", beta, f"[{lead_s}, HV] = {list(lead + (hv,))}")
    if gk is not None and tuple(gk.shape) != lead + (hv, dk):
        raise _shape_error("gk", gk, f"[{lead_s}, HV, K] = {list(lead + (hv, dk))}")
    scale = dk**-0.5 if scale is None else check_float(scale, "scale")

    batch_shape = None
    seq_len = None
    if batched:
        b, t = lead
        if cu_seqlens is not None:
            if b != 1:
                raise ValueError(
                    f"cu_seqlens: a 4-D batch [B, T, ...] with B={b} > 1 takes no cu_seqlens; pass the packed "
                    f"layout [T, H, K] (or B == 1) with cu_seqlens, or drop cu_seqlens for B equal-length sequences"
                )
            q, k, v, g, beta = (x[0] for x in (q, k, v, g, beta))
            gk = gk[0] if gk is not None else None
            batch_shape = (1, t)
        else:
            batch_shape = (b, t)
            seq_len = t
            q, k, v, g, beta = (x.flatten(0, 1) for x in (q, k, v, g, beta))
            gk = gk.flatten(0, 1) if gk is not None else None
            cu_seqlens = torch.arange(b + 1, dtype=torch.int32, device=q.device) * t
    if cu_seqlens is None:
        raise ValueError(
            "cu_seqlens: is None but q is packed [T, H, K]; pass cu_seqlens [N+1] or a 4-D batch [B, T, H, K]"
        )
    total = q.shape[0]
    check_cu_seqlens(cu_seqlens, "cu_seqlens", total=total, device=q.device)
    n_seqs = cu_seqlens.shape[0] - 1

    if initial_state is not None:
        want_dt = (torch.float32, torch.float64) if q.dtype == torch.float64 else (torch.float32,)
        if initial_state.dtype not in want_dt:
            raise ValueError(
                f"initial_state: dtype {initial_state.dtype} is not supported; states are float32 "
                f"(float64 only with float64 q/k/v)"
            )
        if tuple(initial_state.shape) != (n_seqs, hv, dk, dv):
            n_from = (
                "N = B of the 4-D q" if seq_len is not None else f"N + 1 = {n_seqs + 1} entries in cu_seqlens"
            )
            want = f"[N, HV, K, V] = {[n_seqs, hv, dk, dv]} ({n_from})"
            raise _shape_error("initial_state", initial_state, want)

    if seq_len is None:
        check_cu_values(cu_seqlens, "cu_seqlens", total=total)
    return GatedDeltaInputs(
        q=q,
        k=k,
        v=v,
        g=g,
        beta=beta,
        gk=gk,
        initial_state=initial_state,
        cu_seqlens=cu_seqlens,
        scale=scale,
        output_final_state=output_final_state,
        use_qk_l2norm=use_qk_l2norm,
        batch_shape=batch_shape,
        seq_len=seq_len,
    )


def gated_delta_rule(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    beta: torch.Tensor,
    *,
    cu_seqlens: torch.Tensor | None = None,
    scale: float | None = None,
    initial_state: torch.Tensor | None = None,
    output_final_state: bool = False,
    use_qk_l2norm: bool = False,
    gk: torch.Tensor | None = None,
    backend: str = "auto",
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Gated delta rule (Gated DeltaNet) over packed variable-length sequences (SPEC.md section 3).

    Per sequence and value head the state ``S [K, V]`` evolves token by token::

        S' = exp(g_t) * S            (then S' = diag(exp(gk_t)) S' when gk is given)
        u  = beta_t * (v_t - S'^T k_t)
        S  = S' + k_t u^T
        o_t = scale * S^T q_t

    with ``q_t, k_t`` L2-normalised first when ``use_qk_l2norm``.

    Args:
        q: ``[T, H, K]`` packed queries (or ``[B, T, H, K]`` without ``cu_seqlens``).
        k: ``[T, H, K]`` packed keys, like ``q``.
        v: ``[T, HV, V]`` packed values; ``HV % H == 0`` and value head ``hv`` reads q/k head
            ``hv // (HV // H)`` (GVA; q/k are never expanded by the kernels).
        g: ``[T, HV]`` natural-log scalar gates (``<= 0`` expected), any float dtype.
        beta: ``[T, HV]`` delta-rule step sizes, any float dtype.
        cu_seqlens: ``[N+1]`` int32/int64 sequence offsets on q's device (packed layout).
        scale: output scale, default ``K ** -0.5``.
        initial_state: ``[N, HV, K, V]`` fp32 states before each sequence's first token.
        output_final_state: also return the ``[N, HV, K, V]`` fp32 states after each sequence.
        use_qk_l2norm: L2-normalise ``q`` and ``k`` per head (``x / sqrt(sum x^2 + 1e-6)``).
        gk: ``[T, HV, K]`` optional natural-log per-key gates (decay the K rows of the state).
        backend: ``"auto"`` or a backend name (``jagattn.explain("gated_delta", ...)`` lists them).

    Returns:
        ``(o, final_state)``: ``o [T, HV, V]`` (``[B, T, HV, V]`` for 4-D input) in q's dtype;
        ``final_state [N, HV, K, V]`` fp32 when ``output_final_state`` else ``None``.

    Dtype: q/k/v fp16, bf16, fp32 (fp64 on the reference); g, gk, beta any float; states fp32.

    Raises:
        TypeError / ValueError: a bad argument, named in the message, before any compute.
        NotSupportedError: the requested backend (or every backend) cannot run these inputs.
    """
    inputs = make_inputs(
        q,
        k,
        v,
        g,
        beta,
        cu_seqlens=cu_seqlens,
        scale=scale,
        initial_state=initial_state,
        output_final_state=output_final_state,
        use_qk_l2norm=use_qk_l2norm,
        gk=gk,
    )
    impl = dispatch.select(FAMILY, inputs, backend)
    o, final_state = impl(inputs)
    if inputs.batch_shape is not None:
        o = o.unflatten(0, inputs.batch_shape)
    return o, (final_state if output_final_state else None)
