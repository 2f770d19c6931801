"""Session 34 (issue #6), for ``benchmarks/src_variant_ab.py --family gated_delta``: what two backward costs weigh.

Round 1's two variants are measurements, not candidates:

- ``no_gh``: the backward's recompute of the per-chunk states runs without ``COMPUTE_GH`` (no fp32 dS loads in the
  chain, no per-chunk ``sum(S0 * dS)``); dqkwg reads zeros for the state term, so dg is WRONG. It prices the gate
  sums inside the sequential recompute (512 MiB of fp32 dS read on the 32k-token 16-head rows).
- ``noseek8``: ``_seq_of_slot`` without the binary search over ``cu_seqlens`` (``log2 N`` dependent loads at every
  chunk kernel's program start; Nsight Compute, session 33: ~15% of wy's stall samples sit at its prologue). Valid
  ONLY for 8 sequences of 4096 tokens (slot = 65 n + chunk), i.e. the H16-8seqs / H32-8seqs rows: it prices a chunk
  table (one load per program) before building one.
"""

_COMMON = "jagattn.gated_delta.triton.common"

_SEEK_OLD = """    lo = slot * 0
    hi = lo + N
    while hi - lo > 1:
        mid = (lo + hi) // 2
        start = tl.load(CU + mid).to(tl.int32) // BT + mid
        go_right = start <= slot
        lo = tl.where(go_right, mid, lo)
        hi = tl.where(go_right, hi, mid)
    i_t = slot - (tl.load(CU + lo).to(tl.int32) // BT + lo)
"""
_SEEK_NEW = """    lo = slot // 65
    i_t = slot - lo * 65
"""


def _no_gh_pair():
    saved = {}

    def enter():
        import torch
        import triton

        from jagattn.gated_delta.triton import chunk_bwd

        orig = chunk_bwd._state_pass
        saved["fn"] = orig

        def state_pass(*args, dhbuf=None, dhlo=None, **kw):
            out = orig(*args, **kw)
            if dhbuf is None:
                return out
            gh = torch.zeros(
                (dhbuf.shape[0], dhbuf.shape[1], triton.cdiv(dhbuf.shape[3], 16)),
                dtype=torch.float32,
                device=dhbuf.device,
            )
            return (out[0], out[1], out[2], gh, *out[4:])

        chunk_bwd._state_pass = state_pass

    def exit_():
        from jagattn.gated_delta.triton import chunk_bwd

        chunk_bwd._state_pass = saved.pop("fn")

    return enter, exit_


def _set_pair(module: str, name: str, value):
    """(enter, exit) setting ``module.name`` to ``value`` and restoring the saved value."""
    saved = {}

    def enter():
        import importlib

        mod = importlib.import_module(module)
        saved["v"] = getattr(mod, name)
        setattr(mod, name, value)

    def exit_():
        import importlib

        setattr(importlib.import_module(module), name, saved.pop("v"))

    return enter, exit_


_BWD = "jagattn.gated_delta.triton.chunk_bwd"

VARIANTS = {
    "no_gh": [_no_gh_pair()],
    "noseek8": [(_COMMON, "_seq_of_slot", _SEEK_OLD, _SEEK_NEW)],
    # round 2: the chunk table (chunk_bwd.CHUNK_TABLE, default "wy") off, and in dqkwg too; the recompute without
    # its dS prefetch (common.STATE_PREFETCH "0": the gates and dS loaded where used)
    "tab_off": [_set_pair(_BWD, "CHUNK_TABLE", "off")],
    "tab_dqkwg": [_set_pair(_BWD, "CHUNK_TABLE", "wy_dqkwg")],
    "gh_noprefetch": [_set_pair(_COMMON, "STATE_PREFETCH", "0")],
}


# round 3: wy's exposed load latencies (its loops have two column tiles each at K = V = 128, so the pipeliner's
# prologue is most of each loop; the partial gate sums and the l2norm factors are loaded mid-kernel)
_WY = "_gated_delta_bwd_wy_kernel"
_WY_EARLY = [
    (_BWD, _WY, "    b_f = b_beta * b_eg\n",
     "    b_f = b_beta * b_eg\n"
     "    b_dgp = tl.zeros([BT], dtype=tl.float32)\n"
     "    for i_kb in tl.static_range(NKB):\n"
     "        b_dgp += tl.load(DGP + i_kb * TH + rows * HV + i_hv, mask=m_t, other=0.0)\n"
     "    if L2N_BWD:\n"
     "        b_r = tl.load(RSK + rows * H + i_h, mask=m_t, other=0.0)\n"),
    (_BWD, _WY,
     "    for i_kb in tl.static_range(NKB):  # partial gate gradients of dqkwg's key blocks\n"
     "        b_dg += tl.load(DGP + i_kb * TH + rows * HV + i_hv, mask=m_t, other=0.0)\n",
     "    b_dg += b_dgp\n"),
    (_BWD, _WY,
     "        tl.debug_barrier()\n        b_r = tl.load(RSK + rows * H + i_h, mask=m_t, other=0.0)\n",
     "        tl.debug_barrier()\n"),
]  # fmt: skip
_WY_STATIC = [
    (_BWD, _WY,
     "    for i_k in range(tl.cdiv(K, BC)):\n        o_k = i_k * BC + o_c\n        m_k = o_k < K\n"
     "        m_tk = m_t[:, None] & m_k[None, :]\n        b_k = tl.load(",
     "    for i_k in tl.static_range((K + BC - 1) // BC):\n        o_k = i_k * BC + o_c\n        m_k = o_k < K\n"
     "        m_tk = m_t[:, None] & m_k[None, :]\n        b_k = tl.load("),
    (_BWD, _WY, "    for i_v in range(tl.cdiv(V, BC)):\n", "    for i_v in tl.static_range((V + BC - 1) // BC):\n"),
    (_BWD, _WY,
     "    for i_k in range(tl.cdiv(K, BC)):\n        o_k = i_k * BC + o_c\n        m_k = o_k < K\n"
     "        m_tk = m_t[:, None] & m_k[None, :]\n        b_kh = tl.load(",
     "    for i_k in tl.static_range((K + BC - 1) // BC):\n        o_k = i_k * BC + o_c\n        m_k = o_k < K\n"
     "        m_tk = m_t[:, None] & m_k[None, :]\n        b_kh = tl.load("),
]  # fmt: skip
VARIANTS["wy_early"] = _WY_EARLY
VARIANTS["wy_static"] = _WY_STATIC
VARIANTS["wy_early_static"] = _WY_EARLY + _WY_STATIC


# round 7: wy's first two loops (key tiles: K K^T and dW (exp(G) K)^T; value tiles: dU V^T, dv, dbeta) as one loop over
# column tiles, so that the value tiles' loads are in flight with the key tiles' (Nsight Compute, round 6: 9% of wy's
# stall samples at the barrier right after the value loop's first cp.async group, issued only after the key loop)
_WY_LOOP12_OLD = """    for i_k in range(tl.cdiv(K, BC)):
        o_k = i_k * BC + o_c
        m_k = o_k < K
        m_tk = m_t[:, None] & m_k[None, :]
        b_k = tl.load(K_ + (rows[:, None] * H + i_h) * K + o_k[None, :], mask=m_tk, other=0.0)
        b_k = _l2n(b_k, RK, rows, m_t, i_h, H, NORM)
        b_kk += tl.dot(b_k, tl.trans(b_k), input_precision=DOT_PREC)
        b_dwh = tl.load(DW + (rows[:, None] * HV + i_hv) * K + o_k[None, :], mask=m_tk, other=0.0)
        # D_ij += sum_c dW_ic k_jc exp(G_j)
        b_d += tl.dot(b_dwh, tl.trans(b_k.to(b_dwh.dtype)), input_precision=DOT_PREC) * b_eg[None, :]

    for i_v in range(tl.cdiv(V, BC)):
        o_v = i_v * BC + o_c
        m_v = o_v < V
"""
_WY_LOOP12_NEW = """    for i_c in range(((K if K > V else V) + BC - 1) // BC):
        o_k = i_c * BC + o_c
        m_k = o_k < K
        m_tk = m_t[:, None] & m_k[None, :]
        b_k = tl.load(K_ + (rows[:, None] * H + i_h) * K + o_k[None, :], mask=m_tk, other=0.0)
        b_k = _l2n(b_k, RK, rows, m_t, i_h, H, NORM)
        b_kk += tl.dot(b_k, tl.trans(b_k), input_precision=DOT_PREC)
        b_dwh = tl.load(DW + (rows[:, None] * HV + i_hv) * K + o_k[None, :], mask=m_tk, other=0.0)
        # D_ij += sum_c dW_ic k_jc exp(G_j)
        b_d += tl.dot(b_dwh, tl.trans(b_k.to(b_dwh.dtype)), input_precision=DOT_PREC) * b_eg[None, :]
        o_v = i_c * BC + o_c
        m_v = o_v < V
"""
VARIANTS["wy_loop12"] = [(_BWD, _WY, _WY_LOOP12_OLD, _WY_LOOP12_NEW)]
