"""Session 19 round 4 variants for ``benchmarks/src_variant_ab.py --family hstu`` (issue #5).

Default = the tree (scalar block pointers, dK/dV prescaled, unsigned row mask in dK/dV). Variants:

- ``pre0`` / ``pre_dq_dkdv``: ``JAGATTN_HSTU_PRESCALE`` = 0 / dq,dkdv (round 3's default);
- ``smask_bwd``: the two signed compares of the dK/dV row mask (round 3's default);
- ``nomi_bwd`` / ``nomj_fwd``: the edge-block mask without the row (key) range term, which the zero loads
  already cover (rows / keys outside the range read as zeros and contribute nothing);
- ``oldaddr_fwd_win``: the per-row int64 address arithmetic of session 18 in the forward tile only for
  windowed batches (round 3: ctx6-w256's forward 1.068x with the old arithmetic, the other rows 0.97x).
"""

import runpy

F = "jagattn.hstu.triton.fwd"
B = "jagattn.hstu.triton.bwd"
M = "jagattn.hstu.triton.mask"
_env = runpy.run_path("benchmarks/rounds/s19_round2_variants.py")[
    "_env"
]  # JAGATTN_HSTU_PRESCALE around a variant


VARIANTS = {
    "pre0": _env("0"),
    "pre_dq_dkdv": _env("dq,dkdv"),
    "smask_bwd": [
        (
            B,
            "_hstu_bwd_tile",
            "m_i = (r - (row_lo - start_m)).to(tl.uint32) < tl.maximum(row_hi - row_lo, 0).to(tl.uint32)",
            "m_i = (r >= row_lo - start_m) & (r < row_hi - start_m)",
        )
    ],
    "nomi_bwd": [(M, "_zero_hidden_pair", "    vis = vis & m_i[None, :]\n", "")],
    "nomj_fwd": [(F, "_hstu_fwd_tile", "            m_j[None, :],\n", "            True,\n")],
    "oldaddr_fwd_win": [
        (
            F,
            "_hstu_fwd_tile",
            """    col0 = start_n.to(tl.int64)
    b_k = _load_rows(p_k0 + col0 * stride_kn + off_k, m_j, m_dq, PAD_DQ)
    b_v = _load_rows(p_v0 + col0 * stride_vn + off_v, m_j, m_dv, PAD_DV)""",
            """    if HAS_WINDOW:
        b_k = _load_rows(p_k0 + o_j[:, None].to(tl.int64) * stride_kn + o_dq[None, :], m_j, m_dq, PAD_DQ)
        b_v = _load_rows(p_v0 + o_j[:, None].to(tl.int64) * stride_vn + o_dv[None, :], m_j, m_dv, PAD_DV)
    else:
        col0 = start_n.to(tl.int64)
        b_k = _load_rows(p_k0 + col0 * stride_kn + off_k, m_j, m_dq, PAD_DQ)
        b_v = _load_rows(p_v0 + col0 * stride_vn + off_v, m_j, m_dv, PAD_DV)""",
        )
    ],
}
