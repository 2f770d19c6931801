"""Reference HSTU attention over packed sequences: SPEC.md section 2 written as plain torch.

Readable over fast: one Python loop over sequences, the mask built by the id formula of SPEC
section 2, gradients from torch autograd. ``compute_dtype`` is fp32 by default (fp64 for fp64
inputs); passing the input dtype runs the same math with both matmuls and the pointwise
attention weights rounded to that dtype, the "reference run in the input dtype" of the
tolerance rule (SPEC.md section 5).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from .._core.varlen import accumulation_dtype, seq_lengths


def position_ids(
    n: int,
    *,
    num_targets: int | None,
    contextual_seq_len: int,
    device: torch.device | str = "cpu",
) -> tuple[torch.Tensor, int]:
    """``(id [n] int64, M)``: the id of every position and the id shared by the targets (SPEC section 2)."""
    c = contextual_seq_len
    p = torch.arange(n, device=device, dtype=torch.int64)
    ids = p if c == 0 else torch.clamp(p - c + 1, min=0)
    u = n if num_targets is None else n - num_targets
    m = u - c + 1 if c > 0 else u
    if num_targets is not None:
        ids = torch.clamp(ids, max=m)
    return ids, m


def hstu_mask(
    n: int,
    *,
    num_targets: int | None = None,
    contextual_seq_len: int = 0,
    max_attn_len: int = 0,
    min_full_attn_seq_len: int = 0,
    device: torch.device | str = "cpu",
) -> torch.Tensor:
    """``[n, n]`` bool: ``m_ij``, key ``j`` visible from query ``i`` of one sequence of length ``n``."""
    ids, m = position_ids(n, num_targets=num_targets, contextual_seq_len=contextual_seq_len, device=device)
    pos = torch.arange(n, device=device)
    idi, idj = ids[:, None], ids[None, :]
    d = idi - idj
    valid = (pos[:, None] == pos[None, :]) | (d > 0)
    if max_attn_len > 0:
        full = (
            (idi >= m - min_full_attn_seq_len)
            if min_full_attn_seq_len > 0
            else torch.zeros_like(idi, dtype=torch.bool)
        )
        valid = valid & ((d <= max_attn_len) | full)
    if contextual_seq_len > 0:
        valid = valid | ((idi == 0) & (idj < m))
    return valid


def hstu_reference(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    seq_offsets: torch.Tensor,
    *,
    alpha: float,
    scale_len: int,
    num_targets: torch.Tensor | None = None,
    contextual_seq_len: int = 0,
    max_attn_len: int = 0,
    min_full_attn_seq_len: int = 0,
    delta: int | None = None,
    compute_dtype: torch.dtype | None = None,
) -> torch.Tensor:
    """HSTU attention, ``o [Lq, H, Dv]`` in q's dtype. Inputs are assumed validated.

    Args:
        q: ``[L, H, Dq]``, or ``delta_q [B*Δ, H, Dq]`` when ``delta`` is given.
        k: ``[L, H, Dq]``.
        v: ``[L, H, Dv]``.
        seq_offsets: ``[B+1]`` offsets of k/v (and of q when ``delta`` is None).
        alpha: score scale inside the SiLU.
        scale_len: the divisor ``S``.
        num_targets: ``[B]`` ints or None.
        contextual_seq_len, max_attn_len, min_full_attn_seq_len: ``C``, ``W``, ``F``.
        delta: the cached variant: q holds the last ``delta`` rows of every sequence.
        compute_dtype: dtype of the matmuls and of the attention weights (default fp32, fp64
            for fp64 inputs); the SiLU itself is evaluated in at least fp32.

    Dtype: any float; output in q's dtype.
    """
    cdt = compute_dtype or accumulation_dtype(q.dtype)
    pointwise_dt = torch.float64 if cdt == torch.float64 else torch.float32
    h, dv = q.shape[1], v.shape[2]
    lens = seq_lengths(seq_offsets)
    targets = None if num_targets is None else num_targets.detach().to("cpu", torch.int64).tolist()
    inv_s = 1.0 / scale_len if scale_len > 0 else 0.0

    # A zero-size piece that depends on q, k and v keeps autograd connected when no sequence
    # contributes (zero total tokens, only empty sequences, or Δ = 0): gradients are then zeros.
    anchor = (q.sum() + k.sum() + v.sum()).to(cdt) * 0
    parts = [anchor.expand(0, h, dv)]
    start = 0
    for b, n in enumerate(lens):
        rows = n if delta is None else delta
        if rows == 0:
            start += n
            continue
        qstart = start if delta is None else b * delta
        qb = q[qstart : qstart + rows].to(cdt).transpose(0, 1)  # [H, rows, Dq]
        kb = k[start : start + n].to(cdt).transpose(0, 1)  # [H, n, Dq]
        vb = v[start : start + n].to(cdt).transpose(0, 1)  # [H, n, Dv]
        mask = hstu_mask(
            n,
            num_targets=None if targets is None else targets[b],
            contextual_seq_len=contextual_seq_len,
            max_attn_len=max_attn_len,
            min_full_attn_seq_len=min_full_attn_seq_len,
            device=q.device,
        )[n - rows :]  # the cached variant keeps the last Δ query rows
        s = torch.matmul(qb, kb.transpose(1, 2)).to(pointwise_dt) * alpha  # [H, rows, n]
        a = F.silu(s) * inv_s
        a = torch.where(mask, a, torch.zeros_like(a)).to(cdt)
        parts.append(torch.matmul(a, vb).transpose(0, 1))  # [rows, H, Dv]
        start += n
    return torch.cat(parts, dim=0).to(q.dtype)


def hstu_reference_from_inputs(inputs, compute_dtype: torch.dtype | None = None) -> torch.Tensor:
    """:func:`hstu_reference` of a validated :class:`~jagattn.hstu.api.HstuInputs`."""
    return hstu_reference(
        inputs.q,
        inputs.k,
        inputs.v,
        inputs.seq_offsets,
        alpha=inputs.alpha,
        scale_len=inputs.scale_len,
        num_targets=inputs.num_targets,
        contextual_seq_len=inputs.contextual_seq_len,
        max_attn_len=inputs.max_attn_len,
        min_full_attn_seq_len=inputs.min_full_attn_seq_len,
        delta=inputs.delta if inputs.cached else None,
        compute_dtype=compute_dtype,
    )
