"""Session 32 (issue #6), for ``benchmarks/src_variant_ab.py --family gated_delta``: the backward state recurrence
(``_gated_delta_bwd_dhu_kernel``), a latency-bound chain (H16-1seq: 16 chains x 8 V blocks of 16, ~2.6 us per chunk
step against ~1.0 us in the forward's state pass).

- ``narrow``: the gate factors on the narrow ``[BT, BV]`` side instead of the ``[BT, K]`` tiles: ``dU = dU_local +
  exp(G_last - G) (K dS)`` (the decay after the product) and ``Q^T (exp(G) scale dO)``. k and q then feed their dots
  straight from the pipelined shared-memory buffers (no per-step register pass, scaling and copy back of two 64x128
  tiles), as k already does in the forward's state pass.
- ``dul_pf``: without ``FUSE_DV`` (few chains: H16-1seq) the fp32 ``dU_local`` tile is loaded one chunk ahead into
  registers: the local Triton 3.9 TTGIR shows it as the loop's only synchronous ``tt.load`` (every other operand is
  an async copy), so its DRAM latency sits on every chain step.
"""

_M = "jagattn.gated_delta.triton.chunk_bwd"
_K = "_gated_delta_bwd_dhu_kernel"

_NARROW = [
    (
        _M,
        _K,
        "        b_kd = _c(b_k.to(tl.float32) * _exp(g_last - b_g, EXACT_EXP)[:, None], dt, DOT_PREC, KEEP)",
        "        b_kd = _c(b_k, dt, DOT_PREC, KEEP)",
    ),
    (
        _M,
        _K,
        "        b_du = b_dul + tl.dot(b_kd, _c(b_dh, dt, DOT_PREC, KEEP), input_precision=DOT_PREC)",
        "        b_du = b_dul + tl.dot(b_kd, _c(b_dh, dt, DOT_PREC, KEEP), input_precision=DOT_PREC) * tl.where(\n"
        "            m_t, _exp(g_last - b_g, EXACT_EXP), 0.0\n"
        "        )[:, None]",
    ),
    (
        _M,
        _K,
        "            b_qd = _c(b_q.to(tl.float32) * (_exp(b_g, EXACT_EXP) * scale)[:, None], dt, DOT_PREC, KEEP)\n"
        "            if not FUSE_DV:\n"
        "                b_do = tl.load(DO + p_v, mask=m_tv, other=0.0)\n"
        "            b_dh = (\n"
        "                b_dh * _exp(g_last, EXACT_EXP)\n"
        "                + tl.dot(tl.trans(b_qd), _c(b_do, dt, DOT_PREC, KEEP), input_precision=DOT_PREC)\n"
        "                - tl.dot(\n"
        "                    tl.trans(_c(b_w, dt, DOT_PREC, KEEP)),",
        "            b_qd = _c(b_q, dt, DOT_PREC, KEEP)\n"
        "            if not FUSE_DV:\n"
        "                b_do = tl.load(DO + p_v, mask=m_tv, other=0.0)\n"
        "            b_dos = _c(b_do.to(tl.float32) * (_exp(b_g, EXACT_EXP) * scale)[:, None], dt, DOT_PREC, KEEP)\n"
        "            b_dh = (\n"
        "                b_dh * _exp(g_last, EXACT_EXP)\n"
        "                + tl.dot(tl.trans(b_qd), b_dos, input_precision=DOT_PREC)\n"
        "                - tl.dot(\n"
        "                    tl.trans(_c(b_w, dt, DOT_PREC, KEEP)),",
    ),
]

_DUL_PF = [
    (
        _M,
        _K,
        "    for i in range(0, n_chunks):\n        i_t = n_chunks - 1 - i\n",
        "    if not FUSE_DV:\n"
        "        # dU_local of the last chunk (none for an empty sequence), then one chunk ahead in the loop\n"
        "        rows_l = (bos + (n_chunks - 1) * BT + o_t0).to(tl.int64)\n"
        "        m_dl = ((rows_l < eos) & (n_chunks > 0))[:, None] & m_v[None, :]\n"
        "        b_dul_nx = tl.load(DUL + (rows_l[:, None] * HV + i_hv) * V + o_v[None, :], mask=m_dl, other=0.0)\n"
        "    for i in range(0, n_chunks):\n        i_t = n_chunks - 1 - i\n",
    ),
    (
        _M,
        _K,
        "            b_dul = tl.load(DUL + p_v, mask=m_tv, other=0.0)",
        "            b_dul = b_dul_nx\n"
        "            # the previous chunk is full (only a sequence's last chunk can be partial); none before the first\n"
        "            m_dl = (o_t0 < tl.where(i_t > 0, BT, 0))[:, None] & m_v[None, :]\n"
        "            b_dul_nx = tl.load(DUL + p_v - BT * HV * V, mask=m_dl, other=0.0)",
    ),
]

VARIANTS = {
    "narrow": _NARROW,
    "dul_pf": _DUL_PF,
    "narrow_dul_pf": _NARROW + _DUL_PF,
}


# Round 2 (the library now has "narrow" where dhu runs without FUSE_DV): is the unfused dhu (dv_local launched, the
# narrow step) faster on the many-chain rows too, and at which V block / warps.
def _bwd_switches(fuse_dv=None, dhu=None):
    import importlib

    saved = {}

    def enter():
        cb = importlib.import_module("jagattn.gated_delta.triton.chunk_bwd")
        cm = importlib.import_module("jagattn.gated_delta.triton.common")
        saved["fuse_dv"] = cb.FUSE_DV
        saved["override"] = dict(cm.CONFIG_OVERRIDE)
        if fuse_dv is not None:
            cb.FUSE_DV = fuse_dv
        if dhu is not None:
            cm.CONFIG_OVERRIDE["bwd_dhu"] = dhu

    def leave():
        cb = importlib.import_module("jagattn.gated_delta.triton.chunk_bwd")
        cm = importlib.import_module("jagattn.gated_delta.triton.common")
        cb.FUSE_DV = saved["fuse_dv"]
        cm.CONFIG_OVERRIDE.clear()
        cm.CONFIG_OVERRIDE.update(saved["override"])

    return (enter, leave)


VARIANTS.update(
    {
        "unfused_dv": [_bwd_switches(fuse_dv="0")],
        "unfused_dv_v64w8": [_bwd_switches(fuse_dv="0", dhu=(64, 8, 2))],
        "unfused_dv_v32": [_bwd_switches(fuse_dv="0", dhu=(32, 4, 2))],
        "unfused_dv_v64s3": [_bwd_switches(fuse_dv="0", dhu=(64, 4, 3))],
    }
)


# Round 4: H16-1seq's dhu launch configs around the default (16, 4, 3) now that its step is narrow; and the FUSE_DV step
# (many-chain rows) with only one of the two narrow changes (round 1 had both: slower there).
_FUSED_K = [
    (
        _M,
        _K,
        "            b_kd = _c(b_k.to(tl.float32) * _exp(g_last - b_g, EXACT_EXP)[:, None], dt, DOT_PREC, KEEP)\n",
        "            b_kd = _c(b_k, dt, DOT_PREC, KEEP)\n",
    ),
    (
        _M,
        _K,
        "            b_du = b_dul + tl.dot(b_kd, _c(b_dh, dt, DOT_PREC, KEEP), input_precision=DOT_PREC)\n",
        "            b_du = b_dul + tl.dot(b_kd, _c(b_dh, dt, DOT_PREC, KEEP), input_precision=DOT_PREC) * tl.where(\n"
        "                m_t, _exp(g_last - b_g, EXACT_EXP), 0.0\n"
        "            )[:, None]\n",
    ),
]
_FUSED_Q = [
    (
        _M,
        _K,
        "            if FUSE_DV:\n"
        "                b_qd = _c(b_q.to(tl.float32) * (_exp(b_g, EXACT_EXP) * scale)[:, None], dt, DOT_PREC, KEEP)\n"
        "                b_dos = _c(b_do, dt, DOT_PREC, KEEP)\n",
        "            if FUSE_DV:\n"
        "                b_qd = _c(b_q, dt, DOT_PREC, KEEP)\n"
        "                b_dos = _c(b_do.to(tl.float32) * (_exp(b_g, EXACT_EXP) * scale)[:, None], dt, DOT_PREC, KEEP)\n",
    ),
]
VARIANTS.update(
    {
        "fused_k_narrow": _FUSED_K,
        "fused_q_narrow": _FUSED_Q,
        "dhu_16_4_2": [_bwd_switches(dhu=(16, 4, 2))],
        "dhu_16_4_4": [_bwd_switches(dhu=(16, 4, 4))],
        "dhu_32_4_3": [_bwd_switches(dhu=(32, 4, 3))],
        "dhu_16_8_3": [_bwd_switches(dhu=(16, 8, 3))],
    }
)


# Round 5: the state-gradient update as one accumulator chain, dS' = (exp(G_last) dS + Q^T dO~) - W^T dU with the Q^T dO~
# product issued before the chain's K dS product (it does not depend on the chain) and W^T (-dU) accumulated onto it,
# so no separate wait / add for the independent product. "acc_chain": the unfused-dv step (H16-1seq); "acc_chain_fused":
# the FUSE_DV step.
_LOAD_Q_AFTER = (
    "        if not FUSE_DV:  # (the order of the loads before FUSE_DV existed)\n"
    "            b_q = _l2n(tl.load(Q + p_qk, mask=m_tk, other=0.0), RQ, rows, m_t, i_h, H, NORM)\n"
)
_OLD_UPDATE = (
    "            b_dh = (\n"
    "                b_dh * _exp(g_last, EXACT_EXP)\n"
    "                + tl.dot(tl.trans(b_qd), b_dos, input_precision=DOT_PREC)\n"
    "                - tl.dot(\n"
    "                    tl.trans(_c(b_w, dt, DOT_PREC, KEEP)),\n"
    "                    _c(b_du, dt, DOT_PREC, KEEP),\n"
    "                    input_precision=DOT_PREC,\n"
    "                )\n"
    "            )\n"
)
_NEW_UPDATE = (
    "            b_dh = tl.dot(\n"
    "                tl.trans(_c(b_w, dt, DOT_PREC, KEEP)), _c(-b_du, dt, DOT_PREC, KEEP), b_acc, input_precision=DOT_PREC\n"
    "            )\n"
)
_ACC_CHAIN = [
    (
        _M,
        _K,
        "            b_dul = tl.load(DUL + p_v, mask=m_tv, other=0.0)\n            b_du = (\n",
        "            b_q = _l2n(tl.load(Q + p_qk, mask=m_tk, other=0.0), RQ, rows, m_t, i_h, H, NORM)\n"
        "            b_do = tl.load(DO + p_v, mask=m_tv, other=0.0)\n"
        "            b_acc = tl.dot(\n"
        "                tl.trans(_c(b_q, dt, DOT_PREC, KEEP)),\n"
        "                _c(b_do.to(tl.float32) * (_exp(b_g, EXACT_EXP) * scale)[:, None], dt, DOT_PREC, KEEP),\n"
        "                b_dh * _exp(g_last, EXACT_EXP),\n"
        "                input_precision=DOT_PREC,\n"
        "            )\n"
        "            b_dul = tl.load(DUL + p_v, mask=m_tv, other=0.0)\n            b_du = (\n",
    ),
    (_M, _K, _LOAD_Q_AFTER, ""),
    (
        _M,
        _K,
        "                b_qd = _c(b_q, dt, DOT_PREC, KEEP)\n"
        "                b_do = tl.load(DO + p_v, mask=m_tv, other=0.0)\n"
        "                b_dos = _c(b_do.to(tl.float32) * (_exp(b_g, EXACT_EXP) * scale)[:, None], dt, DOT_PREC, KEEP)\n"
        + _OLD_UPDATE,
        "                b_qd = b_q\n"
        "                b_dos = b_do\n"
        "            if FUSE_DV:\n"
        "                b_acc = b_dh * _exp(g_last, EXACT_EXP) + tl.dot(tl.trans(b_qd), b_dos, input_precision=DOT_PREC)\n"
        + _NEW_UPDATE,
    ),
]
_ACC_CHAIN_FUSED = [
    (
        _M,
        _K,
        "            b_do = tl.load(DO + p_v, mask=m_tv, other=0.0)\n            # dv_local's P^T dO",
        "            b_do = tl.load(DO + p_v, mask=m_tv, other=0.0)\n"
        "            b_acc = tl.dot(\n"
        "                tl.trans(_c(b_q.to(tl.float32) * (_exp(b_g, EXACT_EXP) * scale)[:, None], dt, DOT_PREC, KEEP)),\n"
        "                _c(b_do, dt, DOT_PREC, KEEP),\n"
        "                b_dh * _exp(g_last, EXACT_EXP),\n"
        "                input_precision=DOT_PREC,\n"
        "            )\n"
        "            # dv_local's P^T dO",
    ),
    (
        _M,
        _K,
        "                b_dos = _c(b_do.to(tl.float32) * (_exp(b_g, EXACT_EXP) * scale)[:, None], dt, DOT_PREC, KEEP)\n"
        + _OLD_UPDATE,
        "                b_dos = _c(b_do.to(tl.float32) * (_exp(b_g, EXACT_EXP) * scale)[:, None], dt, DOT_PREC, KEEP)\n"
        "            if not FUSE_DV:\n"
        "                b_acc = b_dh * _exp(g_last, EXACT_EXP) + tl.dot(tl.trans(b_qd), b_dos, input_precision=DOT_PREC)\n"
        + _NEW_UPDATE,
    ),
]
# both: the FUSE_DV top issues its product, the unfused-dv step its own; nothing left for the shared update to form
_ACC_CHAIN_BOTH = [
    *_ACC_CHAIN,
    _ACC_CHAIN_FUSED[0],
    (
        _M,
        _K,
        "            if FUSE_DV:\n"
        "                b_acc = b_dh * _exp(g_last, EXACT_EXP) + tl.dot(tl.trans(b_qd), b_dos, input_precision=DOT_PREC)\n",
        "",
    ),
]
VARIANTS.update(
    {
        "acc_chain": _ACC_CHAIN,
        "acc_chain_fused": _ACC_CHAIN_FUSED,
        "acc_chain_both": _ACC_CHAIN_BOTH,
    }
)


# Round 7: the forward's fused state pass (FUSE_WU, V blocks of 64: the many-chain rows) with X S = diag(beta exp(G)) (K S)
# (the factor on the [BT, BV] product) instead of the [BT, K] X tile scaled in registers: the narrow step of dhu.
VARIANTS["fwd_x_narrow"] = [
    (
        "jagattn.gated_delta.triton.chunk_fwd",
        "_vnew_factored",
        "    b_x = b_k.to(tl.float32) * tl.where(m_t, b_beta * _exp(b_g, EXACT_EXP), 0.0)[:, None]\n"
        "    b_xs = tl.dot(_c(b_x, dt, DOT_PREC, KEEP), _c(b_h, dt, DOT_PREC, KEEP), input_precision=DOT_PREC)\n",
        "    b_xs = (\n"
        "        tl.dot(_c(b_k, dt, DOT_PREC, KEEP), _c(b_h, dt, DOT_PREC, KEEP), input_precision=DOT_PREC)\n"
        "        * tl.where(m_t, b_beta * _exp(b_g, EXACT_EXP), 0.0)[:, None]\n"
        "    )\n",
    )
]
