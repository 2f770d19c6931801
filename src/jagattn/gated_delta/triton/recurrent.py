"""Fused recurrent gated delta rule, forward only: the token loop with the state in registers.

For decoding and very short sequences, where the chunked path's four launches and 64-row tiles
are mostly idle. One program per (V block, sequence, value head) walks the sequence's tokens:

    S = exp(g_t) S ; S = diag(exp(gk_t)) S (if gk) ; u = beta_t (v_t - S^T k_t) ; S += k_t u^T
    o_t = scale S^T q_t

everything in fp32 (q/k L2-normalised in-kernel when asked), with or without per-key gates ``gk``
(longer sequences and anything needing gradients run the chunked kernels, ``chunk_gk.py`` for gk).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from ..._core.alloc import new_empty
from ..._core.launch import launch
from .common import block_k, launch_config


@triton.jit
def _gated_delta_fwd_recurrent_kernel(
    Q,
    K_,
    V_,
    G,
    GK,
    BETA,
    O,
    H0,
    HT,
    CU,
    scale,
    H: tl.constexpr,
    HV: tl.constexpr,
    K: tl.constexpr,
    V: tl.constexpr,
    BK: tl.constexpr,
    BV: tl.constexpr,
    USE_L2NORM: tl.constexpr,
    HAS_GK: tl.constexpr,
    USE_INITIAL_STATE: tl.constexpr,
):
    scale = tl.cast(scale, tl.float32)  # Inductor passes Python floats as fp64 scalars
    i_v = tl.program_id(0)
    i_nh = tl.program_id(1)
    i_n = i_nh // HV
    i_hv = i_nh % HV
    i_h = i_hv // (HV // H)
    bos = tl.load(CU + i_n).to(tl.int64)
    eos = tl.load(CU + i_n + 1).to(tl.int64)
    o_k = tl.arange(0, BK)
    o_v = i_v * BV + tl.arange(0, BV)
    m_k = o_k < K
    m_v = o_v < V
    m_kv = m_k[:, None] & m_v[None, :]
    p_state = (i_n * HV + i_hv).to(tl.int64) * K * V + o_k[:, None] * V + o_v[None, :]
    if USE_INITIAL_STATE:
        b_h = tl.load(H0 + p_state, mask=m_kv, other=0.0).to(tl.float32)
    else:
        b_h = tl.zeros([BK, BV], dtype=tl.float32)
    for t in range(bos, eos):
        p_qk = (t * H + i_h) * K + o_k
        b_q = tl.load(Q + p_qk, mask=m_k, other=0.0).to(tl.float32)
        b_k = tl.load(K_ + p_qk, mask=m_k, other=0.0).to(tl.float32)
        if USE_L2NORM:
            b_q = b_q / tl.sqrt(tl.sum(b_q * b_q, 0) + 1e-6)
            b_k = b_k / tl.sqrt(tl.sum(b_k * b_k, 0) + 1e-6)
        p_v = (t * HV + i_hv) * V + o_v
        b_v = tl.load(V_ + p_v, mask=m_v, other=0.0).to(tl.float32)
        b_g = tl.load(G + t * HV + i_hv).to(tl.float32)
        b_beta = tl.load(BETA + t * HV + i_hv).to(tl.float32)
        b_h = b_h * tl.exp(b_g)
        if HAS_GK:
            b_gk = tl.load(GK + (t * HV + i_hv) * K + o_k, mask=m_k, other=0.0).to(tl.float32)
            b_h = b_h * tl.exp(b_gk)[:, None]
        b_u = b_beta * (b_v - tl.sum(b_h * b_k[:, None], 0))
        b_h = b_h + b_k[:, None] * b_u[None, :]
        b_o = tl.sum(b_h * b_q[:, None], 0) * scale
        tl.store(O + p_v, b_o.to(O.dtype.element_ty), mask=m_v)
    tl.store(HT + p_state, b_h, mask=m_kv)


def recurrent_fwd(q, k, v, g, beta, gk, initial_state, cu, scale: float, use_qk_l2norm: bool):
    """``(o [T, HV, V] v.dtype, final_state [N, HV, K, V] fp32)``; inputs contiguous, shapes as the API."""
    t, h, dk = q.shape
    hv, dv = v.shape[1], v.shape[2]
    n = cu.shape[0] - 1
    o = new_empty((t, hv, dv), dtype=v.dtype, device=v.device)
    final = new_empty((n, hv, dk, dv), dtype=torch.float32, device=v.device)
    if n > 0:
        bv, warps, stages = launch_config("fwd_recurrent", n_programs=n * hv, v=dv)
        launch(
            _gated_delta_fwd_recurrent_kernel,
            (triton.cdiv(dv, bv), n * hv),
            q,
            k,
            v,
            g,
            gk if gk is not None else g,
            beta,
            o,
            initial_state if initial_state is not None else final,
            final,
            cu,
            scale,
            H=h,
            HV=hv,
            K=dk,
            V=dv,
            BK=block_k(dk),
            USE_L2NORM=use_qk_l2norm,
            HAS_GK=gk is not None,
            BV=bv,
            USE_INITIAL_STATE=initial_state is not None,
            num_warps=warps,
            num_stages=stages,
        )
    return o, final
