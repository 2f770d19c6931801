"""Session 19 round 8 variant for ``benchmarks/src_variant_ab.py --family attention`` (issue #4).

``rowptr_dkdv``: the dK/dV loop's q^T / dO loads from one scalar row pointer per block plus loop-invariant
int32 in-tile offsets, with a row mask, instead of a per-row clamp (``min(i, lq - 1)``) and a 64-bit
multiply per row and step (what the HSTU kernels gained 1-5% from this session). Rows past ``lq`` now load
as zeros instead of row ``lq - 1``; both give ``p = ds = 0`` there (``lse2 = +inf`` on the padding rows).
"""

A = "jagattn.attention.triton.bwd"
F = "_attention_bwd_dkdv_inner"

VARIANTS = {
    "rowptr_dkdv": [
        (
            A,
            F,
            "    n_blocks = (m_hi - m_lo) // BLOCK_M  # _block_ranges returns block-aligned bounds\n",
            "    n_blocks = (m_hi - m_lo) // BLOCK_M  # _block_ranges returns block-aligned bounds\n"
            "    off_qT = o_m0[None, :] * stride_qt + o_d[:, None]\n"
            "    off_do = o_m0[:, None] * stride_dot + o_dv[None, :]\n",
        ),
        (
            A,
            F,
            """        rows = (bos_q + tl.minimum(o_m, lq - 1)).to(tl.int64)
        # q^T loaded as a [D, BLOCK_M] tile (no tl.trans of a [BLOCK_M, D] one): with delta loaded after the
        # dV product, 1-6% faster dK/dV on the H100 at mean 8192, bitwise the same (session 16)
        b_qT = _load_tile(
            Q + rows[None, :] * stride_qt + i_h * stride_qh + o_d[:, None], o_d < D, m_m, BLOCK_D != D, False
        )
        b_do = _load_tile(
            DO + rows[:, None] * stride_dot + i_h * stride_doh + o_dv[None, :],
            m_m,
            o_dv < DV,
            False,
            BLOCK_DV != DV,
        )""",
            """        row0 = (bos_q + m0).to(tl.int64)
        b_qT = _load_tile(Q + (row0 * stride_qt + i_h * stride_qh) + off_qT, o_d < D, m_m, BLOCK_D != D, True)
        b_do = _load_tile(DO + (row0 * stride_dot + i_h * stride_doh) + off_do, m_m, o_dv < DV, True, BLOCK_DV != DV)""",
        ),
    ],
}
