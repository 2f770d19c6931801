"""Session 19 round 2 variants for ``benchmarks/src_variant_ab.py --family hstu`` (issue #5).

The default is the tree: scalar block pointers + loop-invariant in-tile offsets in every kernel, and the
operand prescaled by alpha/2 in the dQ and dK/dV kernels (``fwd.PRESCALE_DEFAULT``). Variants:

- ``pre0`` / ``pre_dq`` / ``pre_dkdv`` / ``pre_all``: ``JAGATTN_HSTU_PRESCALE`` = 0 / dq / dkdv / fwd,dq,dkdv;
- ``oldaddr_fwd`` / ``oldaddr_bwd``: the per-row int64 address arithmetic of session 18 back in the forward /
  dQ tile, or in the dK/dV tile (the loop-invariant offsets stay computed, unused);
- ``umask_fwd`` / ``umask_bwd``: the load row mask as one unsigned compare instead of two signed ones.
"""

import os

F = "jagattn.hstu.triton.fwd"
B = "jagattn.hstu.triton.bwd"


def _env(value):
    def enter():
        os.environ["JAGATTN_HSTU_PRESCALE"] = value

    def leave():
        os.environ.pop("JAGATTN_HSTU_PRESCALE", None)

    return [(enter, leave)]


_FWD_NEW = """    col0 = start_n.to(tl.int64)
    b_k = _load_rows(p_k0 + col0 * stride_kn + off_k, m_j, m_dq, PAD_DQ)
    b_v = _load_rows(p_v0 + col0 * stride_vn + off_v, m_j, m_dv, PAD_DV)"""
_FWD_OLD = """    b_k = _load_rows(p_k0 + o_j[:, None].to(tl.int64) * stride_kn + o_dq[None, :], m_j, m_dq, PAD_DQ)
    b_v = _load_rows(p_v0 + o_j[:, None].to(tl.int64) * stride_vn + o_dv[None, :], m_j, m_dv, PAD_DV)"""
_BWD_NEW = """    row0 = start_m.to(tl.int64)
    b_q = _load_rows(p_q0 + row0 * stride_qm + off_q, m_i, m_dq, PAD_DQ)  # [BM, BDQ]
    b_do = _load_rows(p_do0 + row0 * stride_dom + off_do, m_i, m_dv, PAD_DV)  # [BM, BDV]"""
_BWD_OLD = """    o_i64 = o_i.to(tl.int64)
    b_q = _load_rows(p_q0 + o_i64[:, None] * stride_qm + o_dq[None, :], m_i, m_dq, PAD_DQ)
    b_do = _load_rows(p_do0 + o_i64[:, None] * stride_dom + o_dv[None, :], m_i, m_dv, PAD_DV)"""

VARIANTS = {
    "pre0": _env("0"),
    "pre_dq": _env("dq"),
    "pre_dkdv": _env("dkdv"),
    "pre_all": _env("fwd,dq,dkdv"),
    "oldaddr_fwd": [(F, "_hstu_fwd_tile", _FWD_NEW, _FWD_OLD)],
    "oldaddr_bwd": [(B, "_hstu_bwd_tile", _BWD_NEW, _BWD_OLD)],
    "umask_fwd": [
        (
            F,
            "_hstu_fwd_tile",
            "m_j = (r < range_hi - start_n) & (r >= -start_n)",
            "m_j = o_j.to(tl.uint32) < range_hi.to(tl.uint32)",
        )
    ],
    "umask_bwd": [
        (
            B,
            "_hstu_bwd_tile",
            "m_i = (r >= row_lo - start_m) & (r < row_hi - start_m)",
            "m_i = (r - (row_lo - start_m)).to(tl.uint32) < tl.maximum(row_hi - row_lo, 0).to(tl.uint32)",
        )
    ],
}
