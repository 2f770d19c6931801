"""Fused recurrent gated delta rule, forward only: the token loop with the state in registers.

For decoding and very short sequences, where the chunked path's four launches and 64-row tiles
are mostly idle. One program per (V block, sequence, value head) walks the sequence's tokens:

    S = exp(g_t) S ; S = diag(exp(gk_t)) S (if gk) ; u = beta_t (v_t - S^T k_t) ; S += k_t u^T
    o_t = scale S^T q_t

everything in fp32 (q/k L2-normalised in-kernel when asked), with or without per-key gates ``gk``
(longer sequences and anything needing gradients run the chunked kernels, ``chunk_gk.py`` for gk).

The token loop's backward (``recurrent_bwd``; fp32 training, ``backends.FP32_TRAIN``): the forward also stores the
fp32 state entering every ``CK``-th token of each sequence (``ckpt_slots`` slots, ``[slots, HV, K, V]``, every one
written: the one a sequence may leave between its last checkpoint and the next sequence's first gets its final
state); one
program per (V block, sequence, value head) walks the tokens last first with ``dS`` in registers and gets the state
before token ``t`` by replaying the forward from the checkpoint of ``t``'s block (at most ``CK - 1`` steps; no
per-token states are stored). Per token, with ``S_a`` the decayed state, ``p = S_a^T k``, ``u = beta (v - p)``,
``S_t = S_a + k u^T``:

    dq = scale S_t dO ; dS += scale q dO^T ; du = dS^T k ; dk = dS u + S_a dp ; dv = beta du
    dbeta = sum(du (v - p)) ; dp = -beta du ; dS_a = dS + k dp^T ; dgk = rowsum(dS_a * S_a) ; dg = sum(dgk)
    dS = exp(g) exp(gk) dS_a

The per-V-block parts of dq, dk, dbeta, dg and dgk (sums over V) are stored per V block and added by the caller.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from ..._core.alloc import new_empty
from ..._core.launch import launch
from .common import block_k, launch_config


@triton.jit
def _program(CU, H: tl.constexpr, HV: tl.constexpr, K: tl.constexpr, V: tl.constexpr, BK: tl.constexpr,
             BV: tl.constexpr):  # fmt: skip
    """This program's (V block, sequence, value head): ``(i_n, i_hv, i_h, bos, eos, o_k, o_v, m_k, m_v, m_kv,
    o_kv, p_state)`` (``o_kv`` a state tile's offsets, ``p_state`` its own in an ``[N, HV, K, V]`` state)."""
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
    o_kv = o_k[:, None] * V + o_v[None, :]
    p_state = (i_n * HV + i_hv).to(tl.int64) * K * V + o_k[:, None] * V + o_v[None, :]
    return i_n, i_hv, i_h, bos, eos, o_k, o_v, m_k, m_v, m_kv, o_kv, p_state


@triton.jit
def _qk_token(Q, K_, t, i_h, o_k, m_k, H: tl.constexpr, K: tl.constexpr, USE_L2NORM: tl.constexpr):
    p_qk = (t * H + i_h) * K + o_k
    b_q = tl.load(Q + p_qk, mask=m_k, other=0.0).to(tl.float32)
    b_k = tl.load(K_ + p_qk, mask=m_k, other=0.0).to(tl.float32)
    if USE_L2NORM:
        b_q = b_q / tl.sqrt(tl.sum(b_q * b_q, 0) + 1e-6)
        b_k = b_k / tl.sqrt(tl.sum(b_k * b_k, 0) + 1e-6)
    return b_q, b_k


@triton.jit
def _decay_token(
    G, GK, t, i_hv, o_k, m_k, HV: tl.constexpr, K: tl.constexpr, BK: tl.constexpr, HAS_GK: tl.constexpr
):
    """``(exp(g_t), exp(gk_t) [BK])`` (the second all ones without gk)."""
    b_eg = tl.exp(tl.load(G + t * HV + i_hv).to(tl.float32))
    if HAS_GK:
        b_egk = tl.exp(tl.load(GK + (t * HV + i_hv) * K + o_k, mask=m_k, other=0.0).to(tl.float32))
    else:
        b_egk = tl.full([BK], 1.0, dtype=tl.float32)
    return b_eg, b_egk


@triton.jit
def _delta_step(b_h, b_k, b_v, b_beta, b_eg, b_egk, HAS_GK: tl.constexpr):
    """One token of the recurrence from the entering state ``b_h``: ``(S_a, v - S_a^T k, S_t)`` with ``S_a`` the
    decayed state and ``S_t = S_a + beta k (v - S_a^T k)^T``."""
    b_ha = b_h * b_eg
    if HAS_GK:
        b_ha = b_ha * b_egk[:, None]
    b_r = b_v - tl.sum(b_ha * b_k[:, None], 0)
    b_ht = b_ha + b_k[:, None] * (b_beta * b_r)[None, :]
    return b_ha, b_r, b_ht


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
    CKPT,
    H: tl.constexpr,
    HV: tl.constexpr,
    K: tl.constexpr,
    V: tl.constexpr,
    BK: tl.constexpr,
    BV: tl.constexpr,
    USE_L2NORM: tl.constexpr,
    HAS_GK: tl.constexpr,
    USE_INITIAL_STATE: tl.constexpr,
    CK: tl.constexpr = 0,
):
    # (the token step written out, not through the backward's helpers: the forward's code stays what the device
    # verified before session 52; with CK = 0 its sm_90 PTX code is the earlier kernel's)
    scale = tl.cast(scale, tl.float32)  # Inductor passes Python floats as fp64 scalars
    i_n, i_hv, i_h, bos, eos, o_k, o_v, m_k, m_v, m_kv, o_kv, p_state = _program(CU, H, HV, K, V, BK, BV)
    if USE_INITIAL_STATE:
        b_h = tl.load(H0 + p_state, mask=m_kv, other=0.0).to(tl.float32)
    else:
        b_h = tl.zeros([BK, BV], dtype=tl.float32)
    for t in range(bos, eos):
        if CK > 0:  # noqa: SIM102 (constexpr first: no modulo by a zero CK) the state entering every CK-th token
            if (t - bos) % CK == 0:
                i_c = bos // CK + i_n + (t - bos) // CK
                tl.store(CKPT + (i_c * HV + i_hv) * K * V + o_kv, b_h, mask=m_kv)
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
    if CK > 0:  # every slot written (no garbage in the op's output): the one slot between this
        # sequence's last checkpoint and the next sequence's first, where there is one, gets the final state
        i_c = bos // CK + i_n + (eos - bos + CK - 1) // CK
        if i_c < eos // CK + i_n + 1:
            tl.store(CKPT + (i_c * HV + i_hv) * K * V + o_kv, b_h, mask=m_kv)


@triton.jit
def _gated_delta_bwd_recurrent_kernel(
    Q,
    K_,
    V_,
    G,
    GK,
    BETA,
    CKPT,
    DO,
    DHT,
    DQP,
    DKP,
    DV,
    DBP,
    DGP,
    DGKP,
    DH0,
    CU,
    T,
    scale,
    H: tl.constexpr,
    HV: tl.constexpr,
    K: tl.constexpr,
    V: tl.constexpr,
    BK: tl.constexpr,
    BV: tl.constexpr,
    CK: tl.constexpr,
    USE_L2NORM: tl.constexpr,
    HAS_GK: tl.constexpr,
    USE_FINAL_STATE_GRADIENT: tl.constexpr,
    STORE_DH0: tl.constexpr,
):
    """The token loop's backward, last token first (module docstring). dq/dk are w.r.t. the normalised q/k with
    ``USE_L2NORM`` (the caller applies the l2norm backward); DQP / DKP / DGKP ``[NV, T, HV, K]`` and DBP / DGP
    ``[NV, T, HV]`` take this V block's parts."""
    scale = tl.cast(scale, tl.float32)  # Inductor passes Python floats as fp64 scalars
    i_n, i_hv, i_h, bos, eos, o_k, o_v, m_k, m_v, m_kv, o_kv, p_state = _program(CU, H, HV, K, V, BK, BV)
    if USE_FINAL_STATE_GRADIENT:
        b_dh = tl.load(DHT + p_state, mask=m_kv, other=0.0).to(tl.float32)
    else:
        b_dh = tl.zeros([BK, BV], dtype=tl.float32)
    p_part = tl.program_id(0).to(tl.int64) * T  # this V block's rows of the partial buffers
    for j in range(eos - bos):
        t = eos - 1 - j
        # the state entering token t: its block's checkpoint, then the tokens of the block before t
        t0 = bos + ((t - bos) // CK) * CK
        i_c = bos // CK + i_n + (t - bos) // CK
        b_h = tl.load(CKPT + (i_c * HV + i_hv) * K * V + o_kv, mask=m_kv, other=0.0)
        for s in range(t0, t):
            _q_s, b_ks = _qk_token(Q, K_, s, i_h, o_k, m_k, H, K, USE_L2NORM)
            b_egs, b_egks = _decay_token(G, GK, s, i_hv, o_k, m_k, HV, K, BK, HAS_GK)
            b_vs = tl.load(V_ + (s * HV + i_hv) * V + o_v, mask=m_v, other=0.0).to(tl.float32)
            b_bs = tl.load(BETA + s * HV + i_hv).to(tl.float32)
            _ha, _r, b_h = _delta_step(b_h, b_ks, b_vs, b_bs, b_egs, b_egks, HAS_GK)
        # token t forward again (S_a, v - p, S_t), then its gradients
        b_q, b_k = _qk_token(Q, K_, t, i_h, o_k, m_k, H, K, USE_L2NORM)
        b_eg, b_egk = _decay_token(G, GK, t, i_hv, o_k, m_k, HV, K, BK, HAS_GK)
        p_v = (t * HV + i_hv) * V + o_v
        b_v = tl.load(V_ + p_v, mask=m_v, other=0.0).to(tl.float32)
        b_beta = tl.load(BETA + t * HV + i_hv).to(tl.float32)
        b_ha, b_r, b_ht = _delta_step(b_h, b_k, b_v, b_beta, b_eg, b_egk, HAS_GK)
        b_u = b_beta * b_r
        b_do = tl.load(DO + p_v, mask=m_v, other=0.0).to(tl.float32)
        b_dq = tl.sum(b_ht * b_do[None, :], 1) * scale
        b_dh += (b_q * scale)[:, None] * b_do[None, :]
        b_du = tl.sum(b_dh * b_k[:, None], 0)
        b_dp = -b_beta * b_du
        b_dk = tl.sum(b_dh * b_u[None, :], 1) + tl.sum(b_ha * b_dp[None, :], 1)
        b_dha = b_dh + b_k[:, None] * b_dp[None, :]
        b_dgk = tl.sum(b_dha * b_ha, 1)
        tl.store(DV + p_v, (b_beta * b_du).to(DV.dtype.element_ty), mask=m_v)
        p_tk = ((p_part + t) * HV + i_hv) * K + o_k
        tl.store(DQP + p_tk, b_dq, mask=m_k)
        tl.store(DKP + p_tk, b_dk, mask=m_k)
        tl.store(DBP + (p_part + t) * HV + i_hv, tl.sum(b_du * b_r, 0))
        tl.store(DGP + (p_part + t) * HV + i_hv, tl.sum(b_dgk, 0))
        if HAS_GK:
            tl.store(DGKP + p_tk, b_dgk, mask=m_k)
            b_dh = b_dha * (b_egk * b_eg)[:, None]
        else:
            b_dh = b_dha * b_eg
    if STORE_DH0:
        tl.store(DH0 + p_state, b_dh, mask=m_kv)


# the backward's checkpoint interval: the state entering every CKPT_TOKENS-th token of a sequence is stored (fp32);
# the backward replays at most CKPT_TOKENS - 1 tokens per token, about CKPT_TOKENS / 2 on average
CKPT_TOKENS = 16


def ckpt_slots(t: int, n: int, ck: int = CKPT_TOKENS) -> int:
    """Checkpoint slots of a batch of ``n`` sequences and ``t`` tokens: block ``i`` of sequence ``s`` (its tokens
    from ``cu[s] + i ck``) lives in slot ``cu[s] // ck + s + i``, unique and below ``t // ck + n`` (no host sync)."""
    return t // ck + n


def recurrent_fwd(
    q, k, v, g, beta, gk, initial_state, cu, scale: float, use_qk_l2norm: bool, checkpoints: bool = False
):
    """``(o [T, HV, V] v.dtype, final_state [N, HV, K, V] fp32)``, and with ``checkpoints`` a third output, the fp32
    states entering every ``CKPT_TOKENS``-th token of each sequence (``[ckpt_slots, HV, K, V]``, for
    ``recurrent_bwd``); inputs contiguous, shapes as the API."""
    t, h, dk = q.shape
    hv, dv = v.shape[1], v.shape[2]
    n = cu.shape[0] - 1
    o = new_empty((t, hv, dv), dtype=v.dtype, device=v.device)
    final = new_empty((n, hv, dk, dv), dtype=torch.float32, device=v.device)
    # the checkpoints only for the training op (the decoding path allocates nothing more)
    ckpt = (
        new_empty((ckpt_slots(t, n), hv, dk, dv), dtype=torch.float32, device=v.device)
        if checkpoints
        else final
    )
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
            ckpt,  # positional: a tensor by keyword would keep the launch replay off
            H=h,
            HV=hv,
            K=dk,
            V=dv,
            BK=block_k(dk),
            USE_L2NORM=use_qk_l2norm,
            HAS_GK=gk is not None,
            BV=bv,
            USE_INITIAL_STATE=initial_state is not None,
            CK=CKPT_TOKENS if checkpoints else 0,
            num_warps=warps,
            num_stages=stages,
        )
    return (o, final, ckpt) if checkpoints else (o, final)


def recurrent_bwd(q, k, v, g, beta, gk, initial_state, cu, ckpt, do, dht, scale: float, use_qk_l2norm: bool):
    """Gradients of ``recurrent_fwd`` from its checkpoints: ``(dq, dk, dv, dg, dbeta, dgk, dh0)``. dq / dk fp32
    ``[T, HV, K]`` per value head (w.r.t. the normalised q / k with ``use_qk_l2norm``), dv in v's dtype, dg / dbeta
    fp32 ``[T, HV]``, dgk fp32 ``[T, HV, K]`` (``[0]`` without gk), dh0 fp32 ``[N, HV, K, V]`` (``[0]`` without an
    initial state). Inputs contiguous."""
    t, h, dk = q.shape
    hv, dv = v.shape[1], v.shape[2]
    n = cu.shape[0] - 1
    dev = v.device
    bv, warps, stages = launch_config("bwd_recurrent", n_programs=n * hv, v=dv)
    nv = triton.cdiv(dv, bv)
    f32 = torch.float32
    dqp = new_empty((nv, t, hv, dk), dtype=f32, device=dev)
    dkp = new_empty((nv, t, hv, dk), dtype=f32, device=dev)
    dgkp = new_empty((nv, t, hv, dk) if gk is not None else (0,), dtype=f32, device=dev)
    dbp = new_empty((nv, t, hv), dtype=f32, device=dev)
    dgp = new_empty((nv, t, hv), dtype=f32, device=dev)
    dvo = new_empty((t, hv, dv), dtype=v.dtype, device=dev)
    dh0 = new_empty((n, hv, dk, dv) if initial_state is not None else (0,), dtype=f32, device=dev)
    if n > 0:
        launch(
            _gated_delta_bwd_recurrent_kernel,
            (nv, n * hv),
            q,
            k,
            v,
            g,
            gk if gk is not None else g,
            beta,
            ckpt,
            do,
            dht if dht is not None else ckpt,
            dqp,
            dkp,
            dvo,
            dbp,
            dgp,
            dgkp,
            dh0,
            cu,
            t,
            scale,
            H=h,
            HV=hv,
            K=dk,
            V=dv,
            BK=block_k(dk),
            BV=bv,
            CK=CKPT_TOKENS,
            USE_L2NORM=use_qk_l2norm,
            HAS_GK=gk is not None,
            USE_FINAL_STATE_GRADIENT=dht is not None,
            STORE_DH0=initial_state is not None,
            num_warps=warps,
            num_stages=stages,
        )
    dgk = dgkp.sum(0) if gk is not None else dgkp
    return dqp.sum(0), dkp.sum(0), dvo, dgp.sum(0), dbp.sum(0), dgk, dh0
