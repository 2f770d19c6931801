"""torch.library registration of the Triton attention kernels.

``jagattn::attention_fwd`` returns ``(o, lse)``; ``jagattn::attention_bwd`` returns
``(dq, dk, dv)``. Both are ``triton_op`` s: their Python bodies only allocate and launch
``wrap_triton`` kernels, so torch.compile/Inductor sees the kernels themselves. The fake (meta)
implementations are explicit (shapes and dtypes only): tracing the bodies with FakeTensors worked on
a GPU, but not through the CPU interpreter's launcher, and cost a trace per compile.
The forward op carries the backward's flags (``deterministic``) so autograd can pass them on;
the gradient of ``lse`` is supported (it enters the backward through ``delta``).
"""

from __future__ import annotations

import torch

from .._core.library import eager_call, forbid_double_backward, qualname, register_eager, saveable
from .._core.replay import Replay
from .triton import bwd as _bwd
from .triton import fwd as _fwd

# Launch replay (_core/replay.py): a call that matches an earlier one in everything but addresses allocates the same
# outputs and scratch and re-runs the recorded compiled kernels. Session 43 (H200, causal mean-512 rows, forward +
# backward): 1.66-1.73 -> 1.16-1.26 ms, host-bound before, kernel-bound with it. On by default since session 44, whose
# round 3 ran every attention / export / eager-fast / HSTU / gluon gpu test with it forced on (all passed but one
# out-of-memory of six test processes sharing the GPU) and round 2 the replay gpu tests (a replay in a fresh thread:
# the per-thread scratch allocator). ``JAGATTN_LAUNCH_REPLAY=0`` turns it off.
_FWD_REPLAY = Replay("attention_fwd")
_BWD_REPLAY = Replay("attention_bwd")


@torch.library.triton_op(qualname("attention_fwd"), mutates_args=())
def attention_fwd(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    cu_seqlens_q: torch.Tensor,
    cu_seqlens_k: torch.Tensor,
    max_seqlen_q: int,
    max_seqlen_k: int,
    window_left: int,
    window_right: int,
    scale: float,
    softcap: float,
    deterministic: bool,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(o [Tq, Hq, Dv], lse [Hq, Tq] fp32)``; see ``triton.fwd.attention_fwd``."""
    args = (
        q,
        k,
        v,
        cu_seqlens_q,
        cu_seqlens_k,
        max_seqlen_q,
        max_seqlen_k,
        window_left,
        window_right,
        scale,
        softcap,
    )
    return _FWD_REPLAY.call(args[:5], args[5:], lambda: _fwd.attention_fwd(*args))


@attention_fwd.register_fake
def _(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, wl, wr, scale, softcap, deterministic):
    # explicit shapes: tracing the body with fake tensors also works on a GPU, but the CPU interpreter's
    # launcher touches data pointers (torch.compile on CPU failed before this), and it is cheaper
    return q.new_empty((q.shape[0], q.shape[1], v.shape[2])), q.new_empty(
        (q.shape[1], q.shape[0]), dtype=torch.float32
    )


@torch.library.triton_op(qualname("attention_bwd"), mutates_args=())
def attention_bwd(
    do: torch.Tensor,
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    o: torch.Tensor,
    lse: torch.Tensor,
    dlse: torch.Tensor | None,
    cu_seqlens_q: torch.Tensor,
    cu_seqlens_k: torch.Tensor,
    max_seqlen_q: int,
    max_seqlen_k: int,
    window_left: int,
    window_right: int,
    scale: float,
    softcap: float,
    deterministic: bool,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(dq, dk, dv)`` like ``(q, k, v)``; see ``triton.bwd.attention_bwd``."""
    if do.stride(-1) != 1:  # e.g. the expanded ones of o.sum().backward()
        do = do.contiguous()
    if dlse is not None and dlse.stride(-1) != 1:
        dlse = dlse.contiguous()
    lse = lse.contiguous()
    args = (
        do, q, k, v, o, lse, dlse, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, window_left, window_right,
        scale, softcap, deterministic,
    )  # fmt: skip
    return _BWD_REPLAY.call(args[:9], args[9:], lambda: _bwd.attention_bwd(*args))


def _setup_context(ctx, inputs, output) -> None:
    # an unused lse (return_lse=False) reaches the backward as None, not as autograd's zero-filled
    # [Hq, Tq] fp32 gradient: no fill kernel, and the delta pass skips the dlse read (HAS_DLSE=False)
    ctx.set_materialize_grads(False)
    q, k, v, cu_q, cu_k, max_q, max_k, wl, wr, scale, softcap, deterministic = inputs
    o, lse = output
    ctx.save_for_backward(q, k, v, o, lse, saveable(cu_q), saveable(cu_k))
    ctx.flags = (max_q, max_k, wl, wr, scale, softcap, deterministic)


def _backward(ctx, do, dlse):
    q, k, v, o, lse, cu_q, cu_k = ctx.saved_tensors
    if do is None:
        do = torch.zeros_like(o)
    dq, dk, dv = eager_call(attention_bwd, do, q, k, v, o, lse, dlse, cu_q, cu_k, *ctx.flags)
    return dq, dk, dv, None, None, None, None, None, None, None, None, None


@attention_bwd.register_fake
def _(do, q, k, v, o, lse, dlse, cu_q, cu_k, max_q, max_k, wl, wr, scale, softcap, deterministic):
    return q.new_empty(q.shape), k.new_empty(k.shape), v.new_empty(v.shape)


attention_fwd.register_autograd(_backward, setup_context=_setup_context)
register_eager(attention_fwd, _setup_context, _backward)
forbid_double_backward(attention_bwd, "attention")
