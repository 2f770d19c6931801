"""torch.library ops of the Triton gated delta rule: ``jagattn::gated_delta_fwd`` / ``_bwd`` (chunked,
scalar gates, differentiable), ``jagattn::gated_delta_fwd_gk`` / ``_bwd_gk`` (chunked with per-key
gates ``gk``, differentiable) and ``jagattn::gated_delta_fwd_recurrent`` (token loop, forward only).

All are ``triton_op``s (Inductor sees the kernels) with explicit fake impls (shapes only; the
body cannot run on fake tensors under the interpreter) and ``register_autograd`` for the backward.
Outputs have a fixed arity: the forward always returns ``(o, final_state)`` and the backward
always returns all six gradients (seven with ``gk``); ``initial_state`` and the final-state gradient are optional
*inputs* (``Tensor?``), which switch kernel variants (``USE_INITIAL_STATE``,
``USE_FINAL_STATE_GRADIENT``) rather than output signatures. Autograd's zero-filling of unused output
gradients is off (``set_materialize_grads(False)``), so an unused final state costs no gradient buffer,
and the scalar-gate backward returns an empty ``[0]`` d_initial_state when there is no initial state
(never computed, never allocated; autograd returns None for it anyway). Besides the inputs, the forward saves only
the gate cumsum and T (below); the backward recomputes the other chunk intermediates (see triton/chunk_bwd.py).

Keeping T (``JAGATTN_GD_SAVE_T=auto|off|fp32|input``, default ``auto``):
``jagattn::gated_delta_fwd_keep_t`` / ``_bwd_keep_t`` also return / take the chunk gate cumsum and the
WY inverse T ``[T, HV, 64]`` (fp32 or the input dtype), so the backward skips ``kkt_solve``;
``chunked_fwd`` (what the backend calls) picks that op when :func:`keep_t_mode` says so (``auto``: fp32
whenever a backward can follow). Cost: ``T * HV * 64 * 4`` bytes (2 for "input") held from the forward
to the backward, e.g. 134 MB (67 MB) on the 32768-token, 16-head rows, plus ``T * HV * 4`` for G; the
backward's dq buffer in bf16 (``chunk_bwd``) pays for it at the backward's peak.

Per-key gates (session 38): ``jagattn::gated_delta_fwd_gk_keep`` / ``_bwd_gk_keep`` also return / take the kkt
kernel's ``T^-1`` and ``P`` (``[T, HV, 64]`` fp32 each), so the gk backward skips its kkt launch;
``chunked_fwd_gk`` picks them by the same :func:`keep_t_mode` (any mode but ``off`` keeps both in fp32).
"""

from __future__ import annotations

import torch
from torch.library import triton_op

from .._core.alloc import new_empty
from .._core.env import env_choice
from .._core.library import eager_call, forbid_double_backward, qualname, register_eager, saveable
from .._core.replay import Replay
from .triton import chunk_fwd as _chunk_fwd_module
from .triton.chunk_bwd import chunk_bwd
from .triton.chunk_fwd import chunk_fwd
from .triton.chunk_gk import chunk_bwd_gk, chunk_fwd_gk
from .triton.common import inter_dtype
from .triton.l2norm import l2norm_bwd, l2norm_bwd_from_y, l2norm_fwd, l2norm_fwd_rstd, l2norm_rstd
from .triton.recurrent import ckpt_slots, recurrent_bwd, recurrent_fwd

# Where the scalar-gate chunk kernels get their L2-normalised q/k (use_qk_l2norm) from:
# "off": normalised copies written by l2norm_fwd (bf16 for bf16 inputs, fp32 for fp16/fp32);
# "auto": bf16 and fp32 inputs pass q, k as given plus their per-row factors 1/sqrt(sum x^2 + eps)
#   ([T, H] fp32, l2norm_rstd) and every kernel normalises its tiles on load (common._l2n): bitwise the
#   same tiles as the copies, without the [T, H, K] write + reads and buffers (H16 32k tokens: 256 MiB
#   less at the peak, ~0.06 ms less l2norm in the forward, ~0.06 ms in the backward). fp16 keeps fp32
#   copies (a tile normalised on load would round to fp16, the accuracy problem below);
# "all": "auto" for fp16 too, rounding the normalised tiles to fp16: a test mode, bitwise equal to
#   "off" with fp16 copies (tests/test_gated_delta_triton.py), since the CPU interpreter has no bf16.
# Default "off" until a device round has measured "auto" (session 8 wrote it without device time).
NORM_ON_LOAD = env_choice("JAGATTN_GD_NORM_ON_LOAD", ("off", "auto", "all"), "off")


# What the keep-T forward (the default when a backward follows) keeps of the l2norm: "auto" keeps the
# normalised copies it made for the chunk kernels and their factors ([T, H] fp32) in place of q and k,
# as FLA does: the backward then neither recomputes the copies (two l2norm launches, 0.128 ms on
# H16 32k tokens, H200) nor the norms (``l2norm_bwd_from_y``). Only where the copies have q's dtype
# (bf16; fp16 makes fp32 copies, twice q's bytes) and the kernels do not normalise on load. "off": keep
# q and k and recompute (the behaviour before session 13).
KEEP_QK = env_choice("JAGATTN_GD_KEEP_QK", ("auto", "off"), "auto")


# "on": with use_qk_l2norm and normalised copies in the input dtype (bf16, fp32), k's copy and factors are
# written by the forward's solve kernel from the raw k it loads anyway (chunk_fwd(norm_k_out=...)) instead of
# by an l2norm launch (one read of k less); q keeps its l2norm launch. The same arithmetic (rows reduced in
# another layout; on the H200 bitwise the same outputs and gradients). Session 22 (H200, Triton 3.6, gd_switch_ab,
# same process): forward 0.889 -> 0.870 ms (H16-8seqs), 1.026 -> 1.005 (H16-ragged): the solve kernel 0.178 ->
# 0.225 ms, the l2norm launches 0.129 -> 0.062; every gated delta gpu test passes with it.
KKT_NORM = env_choice("JAGATTN_GD_KKT_NORM", ("off", "on"), "on")


# "auto": where the backward has the forward's normalised k copy and its factors (KEEP_QK) and no GVA group sum
# follows (HV == H), the WY kernel applies k's l2norm backward itself (chunk_bwd(k_l2n_rstd=...)): its tiles of
# dK are still in L2, so the separate l2norm launch's DRAM reads of fp32 dK and y go away. The row sum
# sum(y dK) is gathered over the WY kernel's column tiles (another order than the l2norm kernel's one sum:
# the last bits of dk may differ). "off": the l2norm launch for k (before session 24).
FUSE_K_L2N = env_choice("JAGATTN_GD_FUSE_K_L2N", ("auto", "off"), "auto")


def _kkt_norm(dtype: torch.dtype, use_qk_l2norm: bool) -> bool:
    """Whether the forward's solve kernel normalises k (``KKT_NORM``; not with ``NORM_ON_LOAD``, fp16's fp32
    copies or the ``dot64`` solve)."""
    return (
        KKT_NORM == "on"
        and use_qk_l2norm
        and not _norm_on_load(dtype, use_qk_l2norm)
        and inter_dtype(dtype, "qk", 0, 0) == dtype
        and _chunk_fwd_module.KKT_VARIANT == "blocks16"
    )


def _kn_buffers(k: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Empty ``(kn [T, H, K] k.dtype, rk [T, H] fp32)`` for the solve kernel to fill (``_kkt_norm``)."""
    return (
        new_empty(tuple(k.shape), dtype=k.dtype, device=k.device),
        new_empty(tuple(k.shape[:2]), dtype=torch.float32, device=k.device),
    )


def _keeps_qk(dtype: torch.dtype, use_qk_l2norm: bool) -> bool:
    """Whether the keep-T forward keeps the normalised q/k copies for the backward (``KEEP_QK``): from
    the dtype and flags only, so that fakes and autograd agree without looking at sizes."""
    return (
        KEEP_QK == "auto"
        and use_qk_l2norm
        and not _norm_on_load(dtype, use_qk_l2norm)
        and inter_dtype(dtype, "qk", 0, 0) == dtype
    )


def _norm_on_load(dtype: torch.dtype, use_qk_l2norm: bool) -> bool:
    """Whether the chunk kernels normalise q/k on load for these inputs (``NORM_ON_LOAD``)."""
    return use_qk_l2norm and (NORM_ON_LOAD == "all" or (NORM_ON_LOAD == "auto" and dtype != torch.float16))


def _prep(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, use_qk_l2norm: bool, kept_rstd=None
) -> tuple[torch.Tensor, torch.Tensor, tuple[torch.Tensor, torch.Tensor] | None]:
    """``(q, k, rstd)`` for the scalar-gate chunk kernels: normalised copies and ``rstd = None``, or
    (``NORM_ON_LOAD``) q, k as given and ``rstd = (rq, rk)`` for the kernels to normalise on load
    (``kept_rstd``: the forward's, kept by autograd; recomputed when empty)."""
    q = q.contiguous()
    k = k.contiguous()
    if not use_qk_l2norm:
        return q, k, None  # the inputs as given
    if _norm_on_load(q.dtype, use_qk_l2norm):
        if kept_rstd is not None and kept_rstd[0].numel() > 0:
            return q, k, kept_rstd
        return q, k, (l2norm_rstd(q), l2norm_rstd(k))
    # Normalised copies in the intermediate dtype: bf16 for bf16 inputs (the speed path), fp32 for
    # fp16, whose chunk kernels compute in fp32 anyway. Rounding them to fp16 was the fp16 path's
    # largest error: dg max-abs 2.14x the reference run's on a random CPU draw (lengths [14, 50, 59],
    # session 8), 0.00x with fp32 q/k.
    dt = inter_dtype(q.dtype, "qk", q.shape[0], v.shape[1])
    return l2norm_fwd(q, dt), l2norm_fwd(k, dt), None


def _prep_gk(q: torch.Tensor, k: torch.Tensor, use_qk_l2norm: bool) -> tuple[torch.Tensor, torch.Tensor]:
    # The gk kernels compute in fp32 from their loads on, so normalised q/k stay fp32 instead of being
    # rounded to fp16/bf16 first: that rounding alone put fp16 dbeta 1.5x over the SPEC rule on one
    # fuzz row (the reference rounds too and happened to land closer), session 3.
    q = q.contiguous()
    k = k.contiguous()
    if use_qk_l2norm:
        return l2norm_fwd(q, torch.float32), l2norm_fwd(k, torch.float32)
    return q, k


def _contig(t: torch.Tensor | None) -> torch.Tensor | None:
    return t.contiguous() if t is not None else None


def _qk_grads(q, k, dq, dk, use_qk_l2norm: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """dq, dk of the kernels (w.r.t. the normalised q/k when ``use_qk_l2norm``) -> w.r.t. q, k."""
    if use_qk_l2norm:
        return l2norm_bwd(q.contiguous(), dq), l2norm_bwd(k.contiguous(), dk)
    return dq.to(q.dtype), dk.to(k.dtype)


def _state_like(q: torch.Tensor, v: torch.Tensor, cu_seqlens: torch.Tensor) -> torch.Tensor:
    """A fake ``[N, HV, K, V]`` fp32 state (final state, d_initial_state)."""
    return v.new_empty((cu_seqlens.shape[0] - 1, v.shape[1], q.shape[2], v.shape[2]), dtype=torch.float32)


def _dh0_like(q: torch.Tensor, v: torch.Tensor, cu_seqlens: torch.Tensor, initial_state) -> torch.Tensor:
    """Fake ``d_initial_state`` of the scalar-gate backward: ``[N, HV, K, V]`` fp32 with an initial
    state, an empty ``[0]`` without one (``chunk_bwd`` then neither computes nor allocates it)."""
    if initial_state is None:
        return v.new_empty((0,), dtype=torch.float32)
    return _state_like(q, v, cu_seqlens)


def _no_materialized_grads(ctx) -> None:
    # An output nobody differentiates (usually the final state) gets None instead of autograd's
    # materialised zeros: the backward then skips the final-state gradient path, and the [N, HV, K, V]
    # fp32 zeros (64 MiB on 64 sequences x 16 heads at K = V = 128) are never allocated.
    ctx.set_materialize_grads(False)


def _do_or_zeros(do: torch.Tensor | None, q: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    # autograd passes None for an output gradient nobody asked for (only the final state is used)
    if do is None:
        return torch.zeros(q.shape[0], v.shape[1], v.shape[2], dtype=v.dtype, device=v.device)
    return do


@triton_op(qualname("gated_delta_fwd"), mutates_args=())
def gated_delta_fwd(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    beta: torch.Tensor,
    initial_state: torch.Tensor | None,
    cu_seqlens: torch.Tensor,
    scale: float,
    use_qk_l2norm: bool,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(o [T, HV, V] q.dtype, final_state [N, HV, K, V] fp32)``; shapes as in the public API."""
    h0 = _contig(initial_state)
    if _kkt_norm(q.dtype, use_qk_l2norm):
        qn = l2norm_fwd(q.contiguous())
        return chunk_fwd(
            qn, k.contiguous(), v.contiguous(), g.contiguous(), beta.contiguous(), h0, cu_seqlens, scale,
            norm_k_out=_kn_buffers(k),
        )  # fmt: skip
    qn, kn, rstd = _prep(q, k, v, use_qk_l2norm)
    return chunk_fwd(
        qn, kn, v.contiguous(), g.contiguous(), beta.contiguous(), h0, cu_seqlens, scale, rstd=rstd
    )


@triton_op(qualname("gated_delta_bwd"), mutates_args=())
def gated_delta_bwd(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    beta: torch.Tensor,
    initial_state: torch.Tensor | None,
    cu_seqlens: torch.Tensor,
    do: torch.Tensor,
    dht: torch.Tensor | None,
    scale: float,
    use_qk_l2norm: bool,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(dq, dk, dv, dg, dbeta, d_initial_state)`` in the dtypes of their inputs (dh0 fp32)."""
    return _bwd_scalar(q, k, v, g, beta, initial_state, cu_seqlens, do, dht, scale, use_qk_l2norm, None)


def _bwd_scalar(
    q, k, v, g, beta, initial_state, cu_seqlens, do, dht, scale, use_qk_l2norm, saved, kept_rstd=None,
    qk_normalized=False, seg=None,
):  # fmt: skip
    """Body of ``gated_delta_bwd`` / ``gated_delta_bwd_keep_t`` (``saved``: the forward's G and T;
    ``kept_rstd``: its q/k l2norm factors when it normalised on load, or with ``qk_normalized`` the
    factors of the normalised copies that it kept and passes as ``q``, ``k``; ``seg``: ``(chunks per
    segment, the forward's segment states)`` for the segment-parallel recompute)."""
    if qk_normalized:
        qn, kn, rstd = q.contiguous(), k.contiguous(), None
    else:
        qn, kn, rstd = _prep(q, k, v, use_qk_l2norm, kept_rstd)
    fuse_k = qk_normalized and FUSE_K_L2N == "auto" and v.shape[1] == k.shape[1]
    dq, dk, dv, dg, db, dh0 = chunk_bwd(
        qn,
        kn,
        v.contiguous(),
        g.contiguous(),
        beta.contiguous(),
        _contig(initial_state),
        cu_seqlens,
        scale,
        do.contiguous(),
        _contig(dht),
        saved=saved,
        rstd=rstd,
        k_l2n_rstd=kept_rstd[1] if fuse_k else None,
        seg=seg,
    )
    if qk_normalized:
        dq = l2norm_bwd_from_y(qn, kept_rstd[0], dq)
        if not fuse_k:  # else dk is final (chunk_bwd's k_l2n_rstd)
            dk = l2norm_bwd_from_y(kn, kept_rstd[1], dk)
    else:
        dq, dk = _qk_grads(q, k, dq, dk, use_qk_l2norm)
    return dq, dk, dv, dg.to(g.dtype), db.to(beta.dtype), dh0


@gated_delta_fwd.register_fake
def _(q, k, v, g, beta, initial_state, cu_seqlens, scale, use_qk_l2norm):
    return v.new_empty(v.shape), _state_like(q, v, cu_seqlens)


@gated_delta_bwd.register_fake
def _(q, k, v, g, beta, initial_state, cu_seqlens, do, dht, scale, use_qk_l2norm):
    return (*(x.new_empty(x.shape) for x in (q, k, v, g, beta)), _dh0_like(q, v, cu_seqlens, initial_state))


def _setup_context(ctx, inputs, output) -> None:
    _no_materialized_grads(ctx)
    q, k, v, g, beta, initial_state, cu_seqlens, scale, use_qk_l2norm = inputs
    ctx.save_for_backward(q, k, v, g, beta, initial_state, saveable(cu_seqlens))
    ctx.scale = scale
    ctx.use_qk_l2norm = use_qk_l2norm
    ctx.has_initial_state = initial_state is not None


def _backward(ctx, do, dht):
    saved = ctx.saved_tensors  # q, k, v, g, beta, initial_state, cu_seqlens
    do = _do_or_zeros(do, saved[0], saved[2])
    dq, dk, dv, dg, db, dh0 = eager_call(gated_delta_bwd, *saved, do, dht, ctx.scale, ctx.use_qk_l2norm)
    return dq, dk, dv, dg, db, (dh0 if ctx.has_initial_state else None), None, None, None


gated_delta_fwd.register_autograd(_backward, setup_context=_setup_context)
register_eager(gated_delta_fwd, _setup_context, _backward)
forbid_double_backward(gated_delta_bwd, "gated_delta_rule")


# Launch replay (_core/replay.py) for the token loop, the decoding path: one launch whose outputs come from
# alloc.new_empty, so a call that matches an earlier one in everything but addresses re-launches the recorded kernel
# without the launcher's decisions or Triton's dispatch (a decoding step's kernel takes microseconds, its host path
# far more). On by default since session 45: the device ran its gpu test (tests/test_launch_replay.py), the gated delta
# gpu tests with it forced on, and a decoding step's host time fell ~0.12 -> ~0.09 ms (gated_delta/README.md, "Session
# 45"); JAGATTN_LAUNCH_REPLAY=0 turns it off. The copies of .contiguous() stay outside the recorded body (replay's
# contract).
_REC_REPLAY = Replay("gated_delta_fwd_recurrent")


def _rec_tensors(q, k, v, g, beta, gk, initial_state, cu_seqlens) -> tuple:
    """The token-loop forwards' tensor arguments, contiguous (``recurrent_fwd``'s first eight)."""
    return (
        q.contiguous(), k.contiguous(), v.contiguous(), g.contiguous(), beta.contiguous(), _contig(gk),
        _contig(initial_state), cu_seqlens,
    )  # fmt: skip


@triton_op(qualname("gated_delta_fwd_recurrent"), mutates_args=())
def gated_delta_fwd_recurrent(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    beta: torch.Tensor,
    gk: torch.Tensor | None,
    initial_state: torch.Tensor | None,
    cu_seqlens: torch.Tensor,
    scale: float,
    use_qk_l2norm: bool,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Forward only (no autograd registered: the backend never routes inputs that need grad here)."""
    tensors = _rec_tensors(q, k, v, g, beta, gk, initial_state, cu_seqlens)
    return _REC_REPLAY.call(
        tensors, (scale, use_qk_l2norm), lambda: recurrent_fwd(*tensors, scale, use_qk_l2norm)
    )


@gated_delta_fwd_recurrent.register_fake
def _(q, k, v, g, beta, gk, initial_state, cu_seqlens, scale, use_qk_l2norm):
    return v.new_empty(v.shape), _state_like(q, v, cu_seqlens)


register_eager(gated_delta_fwd_recurrent)  # forward only: with gradients the dispatcher path


# ---------------------------------------------------------------------------------------------
# fp32 training on the token loop: jagattn::gated_delta_fwd_recurrent_train / _bwd_recurrent (backends.FP32_TRAIN)


@triton_op(qualname("gated_delta_fwd_recurrent_train"), mutates_args=())
def gated_delta_fwd_recurrent_train(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    beta: torch.Tensor,
    gk: torch.Tensor | None,
    initial_state: torch.Tensor | None,
    cu_seqlens: torch.Tensor,
    scale: float,
    use_qk_l2norm: bool,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(o, final_state, checkpoints)``: the token loop's forward that also keeps the fp32 state entering every
    ``recurrent.CKPT_TOKENS``-th token of each sequence (``[ckpt_slots, HV, K, V]``) for its backward."""
    tensors = _rec_tensors(q, k, v, g, beta, gk, initial_state, cu_seqlens)
    return recurrent_fwd(*tensors, scale, use_qk_l2norm, checkpoints=True)


@gated_delta_fwd_recurrent_train.register_fake
def _(q, k, v, g, beta, gk, initial_state, cu_seqlens, scale, use_qk_l2norm):
    n = cu_seqlens.shape[0] - 1
    ckpt = v.new_empty((ckpt_slots(q.shape[0], n), v.shape[1], q.shape[2], v.shape[2]), dtype=torch.float32)
    return v.new_empty(v.shape), _state_like(q, v, cu_seqlens), ckpt


@triton_op(qualname("gated_delta_bwd_recurrent"), mutates_args=())
def gated_delta_bwd_recurrent(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    beta: torch.Tensor,
    gk: torch.Tensor | None,
    initial_state: torch.Tensor | None,
    cu_seqlens: torch.Tensor,
    checkpoints: torch.Tensor,
    do: torch.Tensor,
    dht: torch.Tensor | None,
    scale: float,
    use_qk_l2norm: bool,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(dq, dk, dv, dg, dbeta, dgk, d_initial_state)`` in their inputs' dtypes (dgk ``[0]`` without gk, dh0 fp32,
    ``[0]`` without an initial state)."""
    qc, kc = q.contiguous(), k.contiguous()
    dq, dk, dv, dg, db, dgk, dh0 = recurrent_bwd(
        qc, kc, v.contiguous(), g.contiguous(), beta.contiguous(), _contig(gk), _contig(initial_state), cu_seqlens,
        checkpoints, do.contiguous(), _contig(dht), scale, use_qk_l2norm,
    )  # fmt: skip
    t, h, dkk = q.shape
    grp = v.shape[1] // h
    if grp > 1:  # GVA: a q/k head's gradient is the sum over its value heads
        dq = dq.view(t, h, grp, dkk).sum(2)
        dk = dk.view(t, h, grp, dkk).sum(2)
    dq, dk = _qk_grads(qc, kc, dq, dk, use_qk_l2norm)
    dgk = dgk.to(gk.dtype) if gk is not None else dgk
    return dq, dk, dv, dg.to(g.dtype), db.to(beta.dtype), dgk, dh0


@gated_delta_bwd_recurrent.register_fake
def _(q, k, v, g, beta, gk, initial_state, cu_seqlens, checkpoints, do, dht, scale, use_qk_l2norm):
    dgk = gk.new_empty(gk.shape) if gk is not None else v.new_empty((0,), dtype=torch.float32)
    return (
        *(x.new_empty(x.shape) for x in (q, k, v, g, beta)), dgk, _dh0_like(q, v, cu_seqlens, initial_state)
    )  # fmt: skip


def _setup_context_rec(ctx, inputs, output) -> None:
    _no_materialized_grads(ctx)
    q, k, v, g, beta, gk, initial_state, cu_seqlens, scale, use_qk_l2norm = inputs
    ctx.save_for_backward(q, k, v, g, beta, gk, initial_state, saveable(cu_seqlens), output[2])
    ctx.scale = scale
    ctx.use_qk_l2norm = use_qk_l2norm
    ctx.has_gk = gk is not None
    ctx.has_initial_state = initial_state is not None


def _backward_rec(ctx, do, dht, _dckpt):
    saved = ctx.saved_tensors  # q, k, v, g, beta, gk, initial_state, cu_seqlens, checkpoints
    do = _do_or_zeros(do, saved[0], saved[2])
    dq, dk, dv, dg, db, dgk, dh0 = eager_call(
        gated_delta_bwd_recurrent, *saved, do, dht, ctx.scale, ctx.use_qk_l2norm
    )
    return (
        dq, dk, dv, dg, db, dgk if ctx.has_gk else None, dh0 if ctx.has_initial_state else None, None, None, None
    )  # fmt: skip


gated_delta_fwd_recurrent_train.register_autograd(_backward_rec, setup_context=_setup_context_rec)
register_eager(gated_delta_fwd_recurrent_train, _setup_context_rec, _backward_rec)
forbid_double_backward(gated_delta_bwd_recurrent, "gated_delta_rule")


# ---------------------------------------------------------------------------------------------
# per-key gates: jagattn::gated_delta_fwd_gk / _bwd_gk (chunked, differentiable; g folded into gk)


@triton_op(qualname("gated_delta_fwd_gk"), mutates_args=())
def gated_delta_fwd_gk(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    beta: torch.Tensor,
    gk: torch.Tensor,
    initial_state: torch.Tensor | None,
    cu_seqlens: torch.Tensor,
    scale: float,
    use_qk_l2norm: bool,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(o [T, HV, V] q.dtype, final_state [N, HV, K, V] fp32)`` with per-key gates ``gk [T, HV, K]``."""
    return _fwd_gk(q, k, v, g, beta, gk, initial_state, cu_seqlens, scale, use_qk_l2norm, False)


def _fwd_gk(q, k, v, g, beta, gk, initial_state, cu_seqlens, scale, use_qk_l2norm, keep: bool):
    """Body of ``gated_delta_fwd_gk`` / ``gated_delta_fwd_gk_keep`` (``keep``: also ``(T^-1, P)``)."""
    qn, kn = _prep_gk(q, k, use_qk_l2norm)
    return chunk_fwd_gk(
        qn,
        kn,
        v.contiguous(),
        g.contiguous(),
        gk.contiguous(),
        beta.contiguous(),
        _contig(initial_state),
        cu_seqlens,
        scale,
        q.dtype,
        keep=keep,
    )


@triton_op(qualname("gated_delta_bwd_gk"), mutates_args=())
def gated_delta_bwd_gk(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    beta: torch.Tensor,
    gk: torch.Tensor,
    initial_state: torch.Tensor | None,
    cu_seqlens: torch.Tensor,
    do: torch.Tensor,
    dht: torch.Tensor | None,
    scale: float,
    use_qk_l2norm: bool,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(dq, dk, dv, dg, dbeta, dgk, d_initial_state)`` in the dtypes of their inputs (dh0 fp32)."""
    return _bwd_gk(q, k, v, g, beta, gk, initial_state, cu_seqlens, do, dht, scale, use_qk_l2norm, None)


def _bwd_gk(q, k, v, g, beta, gk, initial_state, cu_seqlens, do, dht, scale, use_qk_l2norm, kept):
    """Body of ``gated_delta_bwd_gk`` / ``gated_delta_bwd_gk_keep`` (``kept``: the forward's ``(T^-1, P)``)."""
    qn, kn = _prep_gk(q, k, use_qk_l2norm)
    dq, dk, dv, dg, db, dgk, dh0 = chunk_bwd_gk(
        qn,
        kn,
        v.contiguous(),
        g.contiguous(),
        gk.contiguous(),
        beta.contiguous(),
        _contig(initial_state),
        cu_seqlens,
        scale,
        do.contiguous(),
        _contig(dht),
        q.dtype,
        kept=kept,
    )
    dq, dk = _qk_grads(q, k, dq, dk, use_qk_l2norm)
    return dq, dk, dv, dg.to(g.dtype), db.to(beta.dtype), dgk.to(gk.dtype), dh0


@gated_delta_fwd_gk.register_fake
def _(q, k, v, g, beta, gk, initial_state, cu_seqlens, scale, use_qk_l2norm):
    return v.new_empty(v.shape), _state_like(q, v, cu_seqlens)


@gated_delta_bwd_gk.register_fake
def _(q, k, v, g, beta, gk, initial_state, cu_seqlens, do, dht, scale, use_qk_l2norm):
    return _bwd_gk_like(q, k, v, g, beta, gk, cu_seqlens)


def _bwd_gk_like(q, k, v, g, beta, gk, cu_seqlens) -> tuple[torch.Tensor, ...]:
    """Fake outputs of the gk backward ops: a gradient per input, d_initial_state ``[N, HV, K, V]`` fp32."""
    return (*(x.new_empty(x.shape) for x in (q, k, v, g, beta, gk)), _state_like(q, v, cu_seqlens))


def _setup_context_gk(ctx, inputs, output, kept=()) -> None:
    """Saves the gk forward's inputs (and ``kept``: the keep op's ``T^-1``, ``P``) for ``_backward_gk``."""
    _no_materialized_grads(ctx)
    q, k, v, g, beta, gk, initial_state, cu_seqlens, scale, use_qk_l2norm = inputs
    ctx.save_for_backward(q, k, v, g, beta, gk, initial_state, saveable(cu_seqlens), *kept)
    ctx.scale = scale
    ctx.use_qk_l2norm = use_qk_l2norm
    ctx.has_initial_state = initial_state is not None


def _backward_gk(ctx, do, dht, op=None):
    """``op`` (default ``gated_delta_bwd_gk``) on the saved tensors: q, k, v, g, beta, gk, initial_state,
    cu_seqlens (and the kept ``T^-1``, ``P`` for ``gated_delta_bwd_gk_keep``)."""
    saved = ctx.saved_tensors
    do = _do_or_zeros(do, saved[0], saved[2])
    dq, dk, dv, dg, db, dgk, dh0 = eager_call(
        op or gated_delta_bwd_gk, *saved, do, dht, ctx.scale, ctx.use_qk_l2norm
    )
    return dq, dk, dv, dg, db, dgk, (dh0 if ctx.has_initial_state else None), None, None, None


gated_delta_fwd_gk.register_autograd(_backward_gk, setup_context=_setup_context_gk)
register_eager(gated_delta_fwd_gk, _setup_context_gk, _backward_gk)
forbid_double_backward(gated_delta_bwd_gk, "gated_delta_rule")


# per-key gates with the kkt kernel's T^-1 and P kept from the forward for the backward (session 38): the
# backward skips its kkt launch (H200, H16 8 x 4096 bf16, strong gk: 2.5 ms of a 14.6 ms backward) for
# 2 x [T, HV, 64] fp32 more kept memory (256 MiB at 32k tokens x 16 heads). Taken by ``chunked_fwd_gk`` when a
# backward can follow (``keep_t_mode``: the same rule and switch, JAGATTN_GD_SAVE_T, as the scalar path's T).


@triton_op(qualname("gated_delta_fwd_gk_keep"), mutates_args=())
def gated_delta_fwd_gk_keep(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    beta: torch.Tensor,
    gk: torch.Tensor,
    initial_state: torch.Tensor | None,
    cu_seqlens: torch.Tensor,
    scale: float,
    use_qk_l2norm: bool,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(o, final_state, T^-1 [T, HV, 64] fp32, P [T, HV, 64] fp32)``: ``gated_delta_fwd_gk``'s outputs (the
    same kernels: bitwise the same values) and the two chunk matrices its backward would recompute."""
    return _fwd_gk(q, k, v, g, beta, gk, initial_state, cu_seqlens, scale, use_qk_l2norm, True)


@gated_delta_fwd_gk_keep.register_fake
def _(q, k, v, g, beta, gk, initial_state, cu_seqlens, scale, use_qk_l2norm):
    t, hv = v.shape[0], v.shape[1]
    kept = tuple(v.new_empty((t, hv, 64), dtype=torch.float32) for _ in range(2))
    return v.new_empty(v.shape), _state_like(q, v, cu_seqlens), *kept


@triton_op(qualname("gated_delta_bwd_gk_keep"), mutates_args=())
def gated_delta_bwd_gk_keep(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    beta: torch.Tensor,
    gk: torch.Tensor,
    initial_state: torch.Tensor | None,
    cu_seqlens: torch.Tensor,
    ainv: torch.Tensor,
    pqk: torch.Tensor,
    do: torch.Tensor,
    dht: torch.Tensor | None,
    scale: float,
    use_qk_l2norm: bool,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """``gated_delta_bwd_gk`` with the forward's ``T^-1`` and ``P`` (``gated_delta_fwd_gk_keep``): no kkt launch,
    bitwise the same gradients."""
    t, hv = v.shape[0], v.shape[1]
    for name, x in (("ainv", ainv), ("pqk", pqk)):
        if tuple(x.shape) != (t, hv, 64) or x.dtype != torch.float32 or not x.is_contiguous():
            raise ValueError(
                f"gated_delta_bwd_gk_keep: {name} must be the forward's contiguous [T, HV, 64] = [{t}, {hv}, 64] "
                f"float32 tensor, got {tuple(x.shape)} {x.dtype}"
            )
    return _bwd_gk(
        q, k, v, g, beta, gk, initial_state, cu_seqlens, do, dht, scale, use_qk_l2norm, (ainv, pqk)
    )


@gated_delta_bwd_gk_keep.register_fake
def _(q, k, v, g, beta, gk, initial_state, cu_seqlens, ainv, pqk, do, dht, scale, use_qk_l2norm):
    return _bwd_gk_like(q, k, v, g, beta, gk, cu_seqlens)


def _setup_context_gk_keep(ctx, inputs, output) -> None:
    _setup_context_gk(ctx, inputs, output, kept=output[2:])


def _backward_gk_keep(ctx, do, dht, _dainv, _dpqk):
    return _backward_gk(ctx, do, dht, gated_delta_bwd_gk_keep)


gated_delta_fwd_gk_keep.register_autograd(_backward_gk_keep, setup_context=_setup_context_gk_keep)
register_eager(gated_delta_fwd_gk_keep, _setup_context_gk_keep, _backward_gk_keep)
forbid_double_backward(gated_delta_bwd_gk_keep, "gated_delta_rule")


# ---------------------------------------------------------------------------------------------
# opt-in: T (and the gate cumsum) kept from the forward for the backward (JAGATTN_GD_SAVE_T)


@triton_op(qualname("gated_delta_fwd_keep_t"), mutates_args=())
def gated_delta_fwd_keep_t(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    beta: torch.Tensor,
    initial_state: torch.Tensor | None,
    cu_seqlens: torch.Tensor,
    scale: float,
    use_qk_l2norm: bool,
    t_in_input_dtype: bool,
    seg_chunks: int = 0,
) -> tuple[
    torch.Tensor,
    torch.Tensor,
    torch.Tensor,
    torch.Tensor,
    torch.Tensor,
    torch.Tensor,
    torch.Tensor,
    torch.Tensor,
    torch.Tensor,
]:
    """``(o, final_state, gc [T, HV] fp32, T^-1 [T, HV, 64] fp32 or q.dtype, rq, rk, qn, kn, hseg)``; o and
    final_state as ``gated_delta_fwd`` (the same kernels: bitwise the same values); ``rq``, ``rk``
    ``[T, H]`` fp32: q's and k's l2norm factors when the kernels normalised on load
    (``NORM_ON_LOAD``) or when the normalised copies ``qn``, ``kn`` (``[T, H, K]`` in q's dtype) are kept
    (``_keeps_qk``), for the backward; ``hseg``: the fp32 states entering each segment of ``seg_chunks``
    chunks (``[T // (64 seg_chunks) + N, HV, K, V]``; the caller's choice, ``_seg_of``) for the backward's
    segment-parallel recompute; unused ones are empty ``[0]``."""
    _check_seg_chunks("gated_delta_fwd_keep_t", seg_chunks)
    norm_k_out = None
    if _keeps_qk(q.dtype, use_qk_l2norm) and _kkt_norm(q.dtype, use_qk_l2norm):
        qn, rq = l2norm_fwd_rstd(q.contiguous())
        norm_k_out = _kn_buffers(k)  # filled by the solve kernel
        kn = k.contiguous()  # chunk_fwd gets the raw k with norm_k_out
        kept, rstd = (rq, norm_k_out[1], qn, norm_k_out[0]), None
    elif _keeps_qk(q.dtype, use_qk_l2norm):
        (qn, rq), (kn, rk) = l2norm_fwd_rstd(q.contiguous()), l2norm_fwd_rstd(k.contiguous())
        kept, rstd = (rq, rk, qn, kn), None
    else:
        qn, kn, rstd = _prep(q, k, v, use_qk_l2norm)
        # (distinct empty tensors: a custom op's outputs may not alias each other)
        none = tuple(q.new_empty((0,), dtype=torch.float32) for _ in range(2))
        kept = (*(rstd if rstd is not None else none), q.new_empty((0,)), k.new_empty((0,)))
    o, final, gc, ainv, hseg = chunk_fwd(
        qn,
        kn,
        v.contiguous(),
        g.contiguous(),
        beta.contiguous(),
        _contig(initial_state),
        cu_seqlens,
        scale,
        keep_t="input" if t_in_input_dtype else "fp32",
        rstd=rstd,
        norm_k_out=norm_k_out,
        seg=seg_chunks,
    )
    return o, final, gc, ainv, *kept, hseg


@gated_delta_fwd_keep_t.register_fake
def _(q, k, v, g, beta, initial_state, cu_seqlens, scale, use_qk_l2norm, t_in_input_dtype, seg_chunks=0):
    t, hv = v.shape[0], v.shape[1]
    keep_qk = _keeps_qk(q.dtype, use_qk_l2norm)
    rshape = q.shape[:2] if keep_qk or _norm_on_load(q.dtype, use_qk_l2norm) else (0,)
    return (
        v.new_empty(v.shape),
        _state_like(q, v, cu_seqlens),
        v.new_empty((t, hv), dtype=torch.float32),
        v.new_empty((t, hv, 64), dtype=q.dtype if t_in_input_dtype else torch.float32),
        q.new_empty(rshape, dtype=torch.float32),
        k.new_empty(rshape, dtype=torch.float32),
        q.new_empty(q.shape if keep_qk else (0,)),
        k.new_empty(k.shape if keep_qk else (0,)),
        _seg_states_like(q, v, cu_seqlens, seg_chunks),
    )


def _check_seg_chunks(
    op: str, seg_chunks, seg_states: torch.Tensor | None = None, backward: bool = False
) -> None:
    """``seg_chunks`` of the keep-T ops: 0 (no segments) or a positive int; the backward also needs the forward's
    ``seg_states`` with it (their shape is checked against it by ``chunk_fwd._state_pass``)."""
    if isinstance(seg_chunks, bool) or not isinstance(seg_chunks, int) or seg_chunks < 0:
        raise ValueError(f"{op}: seg_chunks must be a non-negative int (0: no segments), got {seg_chunks!r}")
    if backward and seg_chunks > 0 and seg_states is None:
        raise ValueError(
            f"{op}: seg_chunks={seg_chunks} needs seg_states (the forward's segment states, hseg)"
        )


def _seg_of(v: torch.Tensor, cu_seqlens: torch.Tensor) -> int:
    """Chunks per segment of the backward's recompute for these shapes (``chunk_fwd.seg_chunks``; 0 for symbolic
    sizes), an argument of the keep-T forward op: its fake impl then gives the real op's shapes under
    ``torch.compile`` with dynamic sizes too."""
    index = v.device.index if v.device.type == "cuda" and v.device.index is not None else 0
    return _chunk_fwd_module.seg_chunks(v.shape[0], cu_seqlens.shape[0] - 1, v.shape[1], v.shape[2], index)


def _seg_states_like(q: torch.Tensor, v: torch.Tensor, cu_seqlens: torch.Tensor, seg: int) -> torch.Tensor:
    """An empty segment-state buffer of the keep-T forward's shape (``[0]`` without segments)."""
    if seg == 0:
        return v.new_empty((0,), dtype=torch.float32)
    slots = _chunk_fwd_module.num_seg_slots(v.shape[0], cu_seqlens.shape[0] - 1, seg)
    return v.new_empty((slots, v.shape[1], q.shape[2], v.shape[2]), dtype=torch.float32)


@triton_op(qualname("gated_delta_bwd_keep_t"), mutates_args=())
def gated_delta_bwd_keep_t(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    beta: torch.Tensor,
    initial_state: torch.Tensor | None,
    cu_seqlens: torch.Tensor,
    gc: torch.Tensor,
    ainv: torch.Tensor,
    rq: torch.Tensor,
    rk: torch.Tensor,
    do: torch.Tensor,
    dht: torch.Tensor | None,
    scale: float,
    use_qk_l2norm: bool,
    qk_normalized: bool = False,
    seg_states: torch.Tensor | None = None,
    seg_chunks: int = 0,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """``gated_delta_bwd`` with the forward's ``gc`` and ``T^-1`` (no ``kkt_solve``) and its q/k l2norm
    factors ``rq``, ``rk`` (empty when it made normalised copies: recomputed as needed). With
    ``qk_normalized``, ``q`` and ``k`` are the forward's kept normalised copies and ``rq``, ``rk`` their
    factors; dq, dk are still the gradients w.r.t. the un-normalised q, k. ``seg_states`` (the forward's
    ``hseg``, with ``seg_chunks`` > 0): the recompute of the per-chunk states runs in segments from them."""
    _check_seg_chunks("gated_delta_bwd_keep_t", seg_chunks, seg_states, backward=True)
    return _bwd_scalar(
        q, k, v, g, beta, initial_state, cu_seqlens, do, dht, scale, use_qk_l2norm, (gc, ainv), (rq, rk),
        qk_normalized, (seg_chunks, seg_states) if seg_chunks > 0 else None,
    )  # fmt: skip


@gated_delta_bwd_keep_t.register_fake
def _(
    q, k, v, g, beta, initial_state, cu_seqlens, gc, ainv, rq, rk, do, dht, scale, use_qk_l2norm,
    qk_normalized=False, seg_states=None, seg_chunks=0,
):  # fmt: skip
    return (*(x.new_empty(x.shape) for x in (q, k, v, g, beta)), _dh0_like(q, v, cu_seqlens, initial_state))


def _setup_context_keep_t(ctx, inputs, output) -> None:
    _no_materialized_grads(ctx)
    q, k, v, g, beta, initial_state, cu_seqlens, scale, use_qk_l2norm, _, *seg = inputs
    _, _, gc, ainv, rq, rk, qn, kn, hseg = output
    ctx.seg_chunks = seg[0] if seg else 0
    ctx.qk_normalized = _keeps_qk(q.dtype, use_qk_l2norm)
    if ctx.qk_normalized:  # the normalised copies stand in for q, k (the originals are not kept)
        q, k = qn, kn
    ctx.save_for_backward(q, k, v, g, beta, initial_state, saveable(cu_seqlens), gc, ainv, rq, rk, hseg)
    ctx.scale = scale
    ctx.use_qk_l2norm = use_qk_l2norm
    ctx.has_initial_state = initial_state is not None


def _backward_keep_t(ctx, do, dht, _dgc, _dainv, _drq, _drk, _dqn, _dkn, _dhseg):
    # q (or qn), k (or kn), v, g, beta, initial_state, cu_seqlens, gc, ainv, rq, rk, hseg
    *saved, hseg = ctx.saved_tensors
    do = _do_or_zeros(do, saved[0], saved[2])
    dq, dk, dv, dg, db, dh0 = eager_call(
        gated_delta_bwd_keep_t, *saved, do, dht, ctx.scale, ctx.use_qk_l2norm, ctx.qk_normalized,
        hseg if ctx.seg_chunks > 0 else None, ctx.seg_chunks,
    )  # fmt: skip
    return dq, dk, dv, dg, db, (dh0 if ctx.has_initial_state else None), None, None, None, None, None


gated_delta_fwd_keep_t.register_autograd(_backward_keep_t, setup_context=_setup_context_keep_t)
register_eager(gated_delta_fwd_keep_t, _setup_context_keep_t, _backward_keep_t)
forbid_double_backward(gated_delta_bwd_keep_t, "gated_delta_rule")

SAVE_T_CHOICES = ("auto", "off", "fp32", "input")
SAVE_T = env_choice("JAGATTN_GD_SAVE_T", SAVE_T_CHOICES, "auto")


def keep_t_mode(*tensors: torch.Tensor | None) -> str:
    """``"off"``, ``"fp32"`` or ``"input"``: what the forward keeps of T for the backward.

    ``auto`` (the default) keeps T in fp32 when a backward can follow (grad mode on and an input
    that requires grad): the backward then skips ``kkt_solve`` and the cast of a recomputed T, and
    its W, U~ are bitwise the forward's. Without a backward nothing extra is kept (inference memory
    unchanged). ``input`` rounds the kept T to bf16/fp16: the backward's W, U~ then differ from the
    forward's, which fails SPEC section 5 on one 32k-token sequence (session 6), so it stays opt-in.
    """
    if SAVE_T != "auto":
        return SAVE_T
    needs_grad = torch.is_grad_enabled() and any(t is not None and t.requires_grad for t in tensors)
    return "fp32" if needs_grad else "off"


def chunked_fwd_gk(q, k, v, g, beta, gk, initial_state, cu_seqlens, scale: float, use_qk_l2norm: bool):
    """The chunked per-key-gate forward the backend runs: ``gated_delta_fwd_gk_keep`` (T^-1 and P kept for the
    backward) when :func:`keep_t_mode` keeps anything (a backward can follow), else ``gated_delta_fwd_gk``."""
    args = (q, k, v, g, beta, gk, initial_state, cu_seqlens, scale, use_qk_l2norm)
    if keep_t_mode(q, k, v, g, beta, gk, initial_state) != "off":
        o, final_state, _, _ = eager_call(gated_delta_fwd_gk_keep, *args)
        return o, final_state
    return eager_call(gated_delta_fwd_gk, *args)


def chunked_fwd(q, k, v, g, beta, initial_state, cu_seqlens, scale: float, use_qk_l2norm: bool):
    """The chunked forward the backend runs: ``gated_delta_fwd_keep_t``, whose T autograd keeps for
    the backward, when :func:`keep_t_mode` says so, else ``gated_delta_fwd``."""
    args = (q, k, v, g, beta, initial_state, cu_seqlens, scale, use_qk_l2norm)
    mode = keep_t_mode(q, k, v, g, beta, initial_state)
    if mode != "off":
        o, final_state, *_ = eager_call(
            gated_delta_fwd_keep_t, *args, mode == "input", _seg_of(v, cu_seqlens)
        )
        return o, final_state
    return eager_call(gated_delta_fwd, *args)
