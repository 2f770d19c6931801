"""Reference gated delta rule: the recurrent token loop of SPEC.md section 3 as plain torch.

Readable over fast: a Python loop over sequences and, inside, over tokens, with every value head
of the sequence updated at once. The state is fp32 (fp64 for fp64 inputs); gradients for every
input come from torch autograd through the loop.

``compute_dtype`` gives the "reference run in the input dtype" of the tolerance rule (SPEC.md
section 5). It keeps the state accumulation in fp32 and rounds to ``compute_dtype`` exactly where
a realistic half-precision chunked kernel holds values in half precision:

- ``q`` and ``k`` after the optional L2 norm (kernels normalise in fp32 and feed the tensor cores
  half-precision operands);
- the state wherever it is *read* (``S'^T k`` and ``S^T q``; chunked kernels store the per-chunk
  states in the input dtype for their matmuls), not where it is accumulated;
- the per-token ``u`` (``v_new``, stored in the input dtype between kernels);
- the output ``o`` (cast to the input dtype on return in every case).

Gradients flowing back through a rounding point are rounded there too, which models a backward
pass that keeps the same intermediates in half precision.
"""

from __future__ import annotations

import torch

from .._core.varlen import accumulation_dtype, seq_lengths

L2NORM_EPS = 1e-6


def l2norm(x: torch.Tensor, eps: float = L2NORM_EPS) -> torch.Tensor:
    """``x / sqrt(sum(x^2, -1) + eps)`` (SPEC.md section 3)."""
    return x * torch.rsqrt(x.pow(2).sum(-1, keepdim=True) + eps)


def gated_delta_reference(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    beta: torch.Tensor,
    cu_seqlens: torch.Tensor,
    *,
    scale: float | None = None,
    initial_state: torch.Tensor | None = None,
    use_qk_l2norm: bool = False,
    gk: torch.Tensor | None = None,
    compute_dtype: torch.dtype | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The token loop of SPEC.md section 3 over a packed batch. Inputs are assumed validated.

    Args:
        q, k: ``[T, H, K]``; v: ``[T, HV, V]``; g, beta: ``[T, HV]``; gk: ``[T, HV, K]`` or None.
        cu_seqlens: ``[N+1]`` offsets (read on the host: one sync on GPU).
        scale: output scale, default ``K ** -0.5``.
        initial_state: ``[N, HV, K, V]`` or None (zeros).
        use_qk_l2norm: L2-normalise q and k per head first.
        compute_dtype: None for full precision, or the dtype to round to at the points listed in
            the module docstring (the input-dtype run of the tolerance rule).

    Returns:
        ``(o [T, HV, V] in q.dtype, final_state [N, HV, K, V])``; the state dtype is fp32, fp64
        for fp64 inputs. An empty sequence's final state is its initial state.

    Dtype: any float inputs; accumulation in fp32 (fp64 for fp64 inputs).
    """
    sdt = accumulation_dtype(q.dtype)
    t_total, h, dk = q.shape
    hv, dv = v.shape[1], v.shape[2]
    group = hv // h
    if scale is None:
        scale = dk**-0.5

    def rnd(x: torch.Tensor) -> torch.Tensor:
        return x if compute_dtype is None else x.to(compute_dtype).to(sdt)

    # Zero-valued scalar that depends on every input (a sum over an empty slice reads no value):
    # added to the outputs it keeps autograd connected when no token contributes.
    srcs = [q, k, v, g, beta] + [t for t in (gk, initial_state) if t is not None]
    anchor = sum(t.reshape(-1)[:0].sum().to(sdt) for t in srcs)

    o_parts = [anchor.expand(0, hv, dv)]
    states = []
    lengths = seq_lengths(cu_seqlens)
    bos = 0
    for n, length in enumerate(lengths):
        if initial_state is not None:
            s = initial_state[n].to(sdt)  # [HV, K, V]
        else:
            s = torch.zeros(hv, dk, dv, dtype=sdt, device=q.device)
        if length == 0:
            states.append(s)
            continue
        rows = slice(bos, bos + length)
        qn = q[rows].to(sdt)
        kn = k[rows].to(sdt)
        if use_qk_l2norm:
            qn, kn = l2norm(qn), l2norm(kn)
        # value head hv reads q/k head hv // group
        qn = rnd(qn).repeat_interleave(group, dim=1)  # [L, HV, K]
        kn = rnd(kn).repeat_interleave(group, dim=1)
        vn = v[rows].to(sdt)  # [L, HV, V]
        decay = torch.exp(g[rows].to(sdt))  # [L, HV]
        decay_k = torch.exp(gk[rows].to(sdt)) if gk is not None else None  # [L, HV, K]
        bn = beta[rows].to(sdt)  # [L, HV]
        outs = []
        for t in range(length):
            s = s * decay[t][:, None, None]
            if decay_k is not None:
                s = s * decay_k[t][:, :, None]
            pred = torch.einsum("hkv,hk->hv", rnd(s), kn[t])
            u = rnd(bn[t][:, None] * (vn[t] - pred))  # [HV, V]
            s = s + kn[t][:, :, None] * u[:, None, :]
            outs.append(scale * torch.einsum("hkv,hk->hv", rnd(s), qn[t]))
        o_parts.append(torch.stack(outs, 0))
        states.append(s)
        bos += length
    o = (torch.cat(o_parts, 0) + anchor).to(v.dtype)
    if states:
        final_state = torch.stack(states, 0) + anchor
    else:
        final_state = anchor.expand(0, hv, dk, dv)
    return o, final_state
