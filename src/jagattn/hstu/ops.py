"""torch.library ops of the HSTU Triton kernels: schemas, fake impls, autograd.

- ``jagattn::hstu_fwd``: forward, differentiable (its backward is ``jagattn::hstu_bwd``).
- ``jagattn::hstu_bwd``: ``(dq, dk, dv)``. dK/dV come from one key-block-parallel kernel; dQ is
  accumulated in fp32 registers by a separate query-block-parallel kernel with a fixed key order
  (the default, and what ``deterministic=True`` guarantees: bit-identical across runs, recomputes
  the scores a second time). Opt-in (``JAGATTN_HSTU_ATOMIC_DQ=1``, ``deterministic=False`` only):
  fp32 atomic adds inside the dK/dV kernel into an ``[L, H, Dq]`` fp32 buffer (one pass, but that
  buffer adds ~50% to the peak memory of a training step's attention).
- ``jagattn::hstu_cached_fwd``: the delta-query forward for KV-cached inference (forward only).

Every op is a ``triton_op`` whose kernels are launched through ``wrap_triton``, so Inductor
sees the kernels under ``torch.compile``. No ``from __future__ import annotations`` here: the
op schemas are inferred from the annotations.
"""

import torch
from torch.library import triton_op

from .._core.alloc import new_empty
from .._core.env import env_flag
from .._core.library import eager_call, forbid_double_backward, qualname, register_eager, saveable
from .._core.replay import Replay
from .triton.bwd import _launch_bwd
from .triton.fwd import _launch

# dQ by fp32 atomics inside the dK/dV kernel when not deterministic: off by default. H200, session 3
# (benchmarks/results/2026-11-21-s3-h200-hstu-dq-paths-vs-gr.json): the dQ-kernel path peaks at GR's
# memory on every hstu row (971 vs 1457 MiB on B=256 N=1024, 195 vs 293 MiB on recsys); against the
# atomic path its backward was faster by 2.5% (B256) and 0.8% (B128), slower by 0.1% (B64) and 4.6%
# (recsys), and 4.4% faster on the C=6 W=256 row with autotuning (15% slower there with the no-window
# first configs, hence the window-ordered config lists in triton/fwd.py and triton/bwd.py).
ATOMIC_DQ_DEFAULT = env_flag("JAGATTN_HSTU_ATOMIC_DQ", False)

# Launch replay (_core/replay.py): a call that matches an earlier one in everything but addresses re-runs its
# compiled kernels without the launchers' decisions and Triton's dispatch (the host-bound recsys row, session 43).
_FWD_REPLAY, _BWD_REPLAY, _CACHED_REPLAY = Replay("hstu_fwd"), Replay("hstu_bwd"), Replay("hstu_cached_fwd")


def _out_shape_fwd(q: torch.Tensor, v: torch.Tensor) -> tuple[int, int, int]:
    return (q.shape[0], q.shape[1], v.shape[2])


@triton_op(qualname("hstu_fwd"), mutates_args=())
def hstu_fwd(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    seq_offsets: torch.Tensor,
    num_targets: torch.Tensor | None,
    max_seq_len: int,
    alpha: float,
    inv_scale: float,
    contextual_seq_len: int,
    max_attn_len: int,
    min_full_attn_seq_len: int,
    deterministic: bool,
) -> torch.Tensor:
    """``o [L, H, Dv]`` in q's dtype (see ``triton/fwd.py``)."""
    return _forward(
        _FWD_REPLAY, q, k, v, seq_offsets, num_targets, max_seq_len, alpha, inv_scale, contextual_seq_len,
        max_attn_len, min_full_attn_seq_len, None,
    )  # fmt: skip


def _forward(replay, q, k, v, seq_offsets, num_targets, max_seq_len, alpha, inv_scale, c, w, f, delta):
    """The forward kernel into a new ``out`` (``delta``: the cached forward's rows per sequence), through ``replay``."""
    out = new_empty(_out_shape_fwd(q, v), dtype=q.dtype, device=q.device)
    tensors = (q, k, v, seq_offsets, num_targets, out)
    key = replay.key(tensors, (max_seq_len, alpha, inv_scale, c, w, f))
    if not replay.run(key, tensors):
        with replay.record(key, tensors):
            _launch(
                0, q, k, v, None, out, seq_offsets, num_targets, max_seq_len, alpha, inv_scale, c, w, f, delta
            )
    return out


@hstu_fwd.register_fake
def _(q, k, v, seq_offsets, num_targets, max_seq_len, alpha, inv_scale, c, w, f, deterministic):
    return q.new_empty(_out_shape_fwd(q, v))


@triton_op(qualname("hstu_bwd"), mutates_args=())
def hstu_bwd(
    do: torch.Tensor,
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    seq_offsets: torch.Tensor,
    num_targets: torch.Tensor | None,
    max_seq_len: int,
    alpha: float,
    inv_scale: float,
    contextual_seq_len: int,
    max_attn_len: int,
    min_full_attn_seq_len: int,
    deterministic: bool,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(dq, dk, dv)`` in the inputs' dtype, accumulated in fp32."""
    dk = new_empty(tuple(k.shape), dtype=k.dtype, device=k.device)
    dv = new_empty(tuple(v.shape), dtype=v.dtype, device=v.device)
    args = (seq_offsets, num_targets, max_seq_len, alpha, inv_scale, contextual_seq_len, max_attn_len)
    if deterministic or not ATOMIC_DQ_DEFAULT:
        # dQ allocated first: with a window and contextual rows the dK/dV launch keeps fp32 scratch in it
        # (triton/bwd.py, ctx_split), which the dQ kernel reads and then overwrites
        dq = new_empty(tuple(q.shape), dtype=q.dtype, device=q.device)
        tensors = (do, q, k, v, seq_offsets, num_targets, dq, dk, dv)
        key = _BWD_REPLAY.key(tensors, (*args[2:], min_full_attn_seq_len))
        if not _BWD_REPLAY.run(key, tensors):
            with _BWD_REPLAY.record(key, tensors):
                ks = _launch_bwd(do, q, k, v, None, dk, dv, *args, min_full_attn_seq_len, dq_out=dq)
                _launch(1, q, k, v, do, dq, *args, min_full_attn_seq_len, None, ctx_ks=ks)
    else:
        dq_accum = torch.zeros(tuple(q.shape), dtype=torch.float32, device=q.device)
        _launch_bwd(do, q, k, v, dq_accum, dk, dv, *args, min_full_attn_seq_len)
        dq = dq_accum.to(q.dtype) if q.dtype != torch.float32 else dq_accum
    return dq, dk, dv


@hstu_bwd.register_fake
def _(do, q, k, v, seq_offsets, num_targets, max_seq_len, alpha, inv_scale, c, w, f, deterministic):
    return q.new_empty(q.shape), k.new_empty(k.shape), v.new_empty(v.shape)


def _setup_context(ctx, inputs, output) -> None:
    q, k, v, seq_offsets, num_targets, *params = inputs
    ctx.save_for_backward(q, k, v, saveable(seq_offsets), saveable(num_targets))
    ctx.params = params


def _backward(ctx, do: torch.Tensor):
    q, k, v, seq_offsets, num_targets = ctx.saved_tensors
    if do.stride(-1) != 1:
        do = do.contiguous()
    dq, dk, dv = eager_call(hstu_bwd, do, q, k, v, seq_offsets, num_targets, *ctx.params)
    return dq, dk, dv, None, None, None, None, None, None, None, None, None


hstu_fwd.register_autograd(_backward, setup_context=_setup_context)
register_eager(hstu_fwd, _setup_context, _backward)
forbid_double_backward(hstu_bwd, "hstu_attention")


@triton_op(qualname("hstu_cached_fwd"), mutates_args=())
def hstu_cached_fwd(
    delta_q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    seq_offsets: torch.Tensor,
    num_targets: torch.Tensor | None,
    max_seq_len: int,
    alpha: float,
    inv_scale: float,
    contextual_seq_len: int,
    max_attn_len: int,
    min_full_attn_seq_len: int,
) -> torch.Tensor:
    """``o [B*Δ, H, Dv]``: rows ``n_b - Δ .. n_b - 1`` of every sequence (Δ = rows / B)."""
    batch = seq_offsets.shape[0] - 1
    delta = delta_q.shape[0] // batch if batch > 0 else 0
    return _forward(
        _CACHED_REPLAY, delta_q, k, v, seq_offsets, num_targets, max_seq_len, alpha, inv_scale, contextual_seq_len,
        max_attn_len, min_full_attn_seq_len, delta,
    )  # fmt: skip


@hstu_cached_fwd.register_fake
def _(delta_q, k, v, seq_offsets, num_targets, max_seq_len, alpha, inv_scale, c, w, f):
    return delta_q.new_empty(_out_shape_fwd(delta_q, v))


def _cached_backward(ctx, do):
    raise RuntimeError(
        "jagattn::hstu_cached_fwd is forward only (KV-cached inference); run it under torch.no_grad() "
        "or use hstu_attention for training"
    )


def _cached_setup(ctx, inputs, output) -> None:
    return None


hstu_cached_fwd.register_autograd(_cached_backward, setup_context=_cached_setup)
register_eager(hstu_cached_fwd, _cached_setup, _cached_backward)
