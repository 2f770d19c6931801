"""Reference softmax attention over packed sequences: SPEC.md section 1 written as plain torch.

Readable over fast: one Python loop over sequences, explicit mask, explicit softmax. Gradients
come from torch autograd. ``compute_dtype`` is fp32 by default (fp64 for fp64 inputs); passing
the input dtype runs the same math with every matmul and the probabilities rounded to that dtype,
which is the "reference run in the input dtype" of the tolerance rule (SPEC.md section 5).
"""

from __future__ import annotations

import math

import torch

from .._core.varlen import accumulation_dtype, seq_lengths


def visible_mask(
    lq: int, lk: int, *, causal: bool, window: tuple[int, int], device: torch.device | str = "cpu"
) -> torch.Tensor:
    """``[lq, lk]`` bool: key ``j`` visible from query ``i`` (bottom-right aligned, SPEC.md section 1)."""
    left, right = window
    if causal:
        right = 0
    i = torch.arange(lq, device=device).unsqueeze(1)
    j = torch.arange(lk, device=device).unsqueeze(0)
    diag = i + (lk - lq)
    mask = torch.ones(lq, lk, dtype=torch.bool, device=device)
    if left >= 0:
        mask &= j >= diag - left
    if right >= 0:
        mask &= j <= diag + right
    return mask


def attention_reference(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    cu_seqlens_q: torch.Tensor,
    cu_seqlens_k: torch.Tensor,
    *,
    causal: bool = False,
    window: tuple[int, int] = (-1, -1),
    scale: float | None = None,
    softcap: float = 0.0,
    compute_dtype: torch.dtype | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Returns ``(o [Tq, Hq, Dv] in q.dtype, lse [Hq, Tq] fp32)``. Inputs are assumed validated."""
    cdt = compute_dtype or accumulation_dtype(q.dtype)
    hq, hkv = q.shape[1], k.shape[1]
    group = hq // hkv
    dv = v.shape[2]
    if scale is None:
        scale = q.shape[2] ** -0.5
    lens_q = seq_lengths(cu_seqlens_q)
    lens_k = seq_lengths(cu_seqlens_k)
    starts_q = [0]
    starts_k = [0]
    for a, b in zip(lens_q, lens_k, strict=False):
        starts_q.append(starts_q[-1] + a)
        starts_k.append(starts_k[-1] + b)

    # A zero-size piece that depends on q, k and v keeps autograd connected when no sequence
    # contributes (zero total tokens, or only empty sequences): gradients are then zeros.
    anchor = (q.sum() + k.sum() + v.sum()).to(cdt) * 0
    o_parts = [anchor.expand(0, hq, dv)]
    lse_parts = [anchor.float().expand(hq, 0)]
    for b, (lq, lk) in enumerate(zip(lens_q, lens_k, strict=False)):
        if lq == 0:
            continue
        if lk == 0:  # no key at all: every row outputs zeros and lse = -inf
            o_parts.append(anchor.expand(lq, hq, dv))
            lse_parts.append(torch.full((hq, lq), -math.inf, device=q.device) + anchor.float())
            continue
        qb = q[starts_q[b] : starts_q[b] + lq].to(cdt).transpose(0, 1)  # [Hq, Lq, D]
        kb = k[starts_k[b] : starts_k[b] + lk].to(cdt).transpose(0, 1)  # [Hkv, Lk, D]
        vb = v[starts_k[b] : starts_k[b] + lk].to(cdt).transpose(0, 1)  # [Hkv, Lk, Dv]
        kb = kb.repeat_interleave(group, dim=0)  # query head h reads kv head h // group
        vb = vb.repeat_interleave(group, dim=0)
        s = torch.matmul(qb, kb.transpose(1, 2)) * scale  # [Hq, Lq, Lk]
        if softcap > 0:
            s = softcap * torch.tanh(s / softcap)
        s = s.float() if cdt != torch.float64 else s
        mask = visible_mask(lq, lk, causal=causal, window=window, device=q.device)
        s = s.masked_fill(~mask, float("-inf"))
        # Rows with no visible key: max is -inf; use 0 so exp() gives exact zeros, not NaN.
        m = s.amax(dim=-1, keepdim=True).detach()
        m = torch.where(torch.isfinite(m), m, torch.zeros_like(m))
        p = torch.exp(s - m)
        l = p.sum(dim=-1, keepdim=True)
        safe_l = torch.where(l > 0, l, torch.ones_like(l))
        p = (p / safe_l).to(cdt)
        ob = torch.matmul(p, vb)  # [Hq, Lq, Dv]
        o_parts.append(ob.transpose(0, 1).to(cdt))
        lse = torch.where(l > 0, m + torch.log(safe_l), torch.full_like(l, -math.inf))
        lse_parts.append(lse.squeeze(-1).float())
        del s
    o = torch.cat(o_parts, dim=0).to(q.dtype)
    lse = torch.cat(lse_parts, dim=1)
    return o, lse
