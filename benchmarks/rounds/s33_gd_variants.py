"""Session 33 (issue #6), for ``benchmarks/src_variant_ab.py --family gated_delta``: backward bytes.

- ``wy2p``: with ``L2N_BWD`` (the suite's rows: l2norm, ``HV == H``) the WY kernel's step 4 no longer stores the
  fp32 dK tile to re-read it after a barrier for k's l2norm backward; a first pass over the key tiles forms the row
  sums ``sum(y dK)`` (and dbeta / dG's dW parts), a second pass forms each dK tile again (its dW and DK re-reads
  come from L2: the same program read them just before) and stores only ``DKX``. The dK buffer is dead after wy,
  so the old store was 256 MiB of DRAM writes on the 32k-token 16-head rows. Same products in the same order:
  expected bitwise.
- ``dh_copy``: ``chunk_bwd.DH_COPY = "auto"`` (session 32's prepared switch): the recompute stores a bf16 copy of
  the fp32 dS it loads anyway and dqkwg reads that (half the bytes of its largest operand).
  Measured slower (round 2) and its switch removed again in a0f200c: this variant no longer applies.
"""

_M = "jagattn.gated_delta.triton.chunk_bwd"
_WY = "_gated_delta_bwd_wy_kernel"

_OLD_STEP4 = """        b_dkn = tl.load(DK + p_kv, mask=m_tk, other=0.0) + b_tdw * b_f[:, None] + b_mk
        tl.store(DK + p_kv, b_dkn, mask=m_tk)
        if L2N_BWD:
            b_ys += tl.sum(b_dkn * b_k, 1)

    if L2N_BWD:
        # every thread re-reads tiles other threads stored: the barrier orders those stores before the loads
        tl.debug_barrier()
        b_r = tl.load(RSK + rows * H + i_h, mask=m_t, other=0.0)
        for i_k in range(tl.cdiv(K, BC)):
            o_k = i_k * BC + o_c
            m_tk = m_t[:, None] & (o_k < K)[None, :]
            p_k = (rows[:, None] * H + i_h) * K + o_k[None, :]  # HV == H: also DK's offsets
            b_y = tl.load(K_ + p_k, mask=m_tk, other=0.0).to(tl.float32)
            b_dx = b_r[:, None] * (tl.load(DK + p_k, mask=m_tk, other=0.0) - b_y * b_ys[:, None])
            tl.store(DKX + p_k, b_dx.to(DKX.dtype.element_ty), mask=m_tk)
"""

_NEW_STEP4 = """        b_dkn = tl.load(DK + p_kv, mask=m_tk, other=0.0) + b_tdw * b_f[:, None] + b_mk
        if L2N_BWD:
            b_ys += tl.sum(b_dkn * b_k, 1)
        else:
            tl.store(DK + p_kv, b_dkn, mask=m_tk)

    if L2N_BWD:
        b_r = tl.load(RSK + rows * H + i_h, mask=m_t, other=0.0)
        b_dmc = _c(b_dm, dt, DOT_PREC, KEEP)
        for i_k in range(tl.cdiv(K, BC)):
            o_k = i_k * BC + o_c
            m_tk = m_t[:, None] & (o_k < K)[None, :]
            p_k = (rows[:, None] * H + i_h) * K + o_k[None, :]  # HV == H: also DK's and DW's offsets
            b_kh = tl.load(K_ + p_k, mask=m_tk, other=0.0)
            b_y = b_kh.to(tl.float32)
            b_tdw = tl.dot(tl.trans(b_a), _c(tl.load(DW + p_k, mask=m_tk, other=0.0), dt, DOT_PREC, KEEP), input_precision=DOT_PREC)
            b_kc = _c(b_kh, dt, DOT_PREC, KEEP)
            b_mk = tl.dot(b_dmc, b_kc, input_precision=DOT_PREC) + tl.trans(
                tl.dot(tl.trans(b_kc), b_dmc, input_precision=DOT_PREC)
            )
            b_dkn = tl.load(DK + p_k, mask=m_tk, other=0.0) + b_tdw * b_f[:, None] + b_mk
            b_dx = b_r[:, None] * (b_dkn - b_y * b_ys[:, None])
            tl.store(DKX + p_k, b_dx.to(DKX.dtype.element_ty), mask=m_tk)
"""


def _dh_copy(mode):
    def set_():
        from jagattn.gated_delta.triton import chunk_bwd

        chunk_bwd.DH_COPY = mode

    return set_


_DH_COPY = (_dh_copy("auto"), _dh_copy("off"))
_WY2P = [(_M, _WY, _OLD_STEP4, _NEW_STEP4)]

VARIANTS = {
    "wy2p": _WY2P,
    "dh_copy": [_DH_COPY],
    "wy2p_dh_copy": [*_WY2P, _DH_COPY],
}


# round 3: dhu's V block on the ragged row (its 116-chunk chain is the critical path: dhu 0.68 ms there against 0.44
# on H16-8seqs); launch_config picks BV 64 from the chain count alone (128 chains)
def _dhu_cfg(cfg, fuse):
    def enter():
        from jagattn.gated_delta.triton import chunk_bwd, common

        common.CONFIG_OVERRIDE["bwd_dhu"] = cfg
        chunk_bwd.FUSE_DV = fuse

    def exit_():
        from jagattn.gated_delta.triton import chunk_bwd, common

        common.CONFIG_OVERRIDE.pop("bwd_dhu", None)
        chunk_bwd.FUSE_DV = "auto"

    return [(enter, exit_)]


VARIANTS.update(
    {
        "dhu_32_4_2": _dhu_cfg((32, 4, 2), "1"),
        "dhu_32_4_3": _dhu_cfg((32, 4, 3), "1"),
        "dhu_32_8_2": _dhu_cfg((32, 8, 2), "1"),
        "dhu_64_8_2": _dhu_cfg((64, 8, 2), "1"),
        "dhu_32_4_2_unfused": _dhu_cfg((32, 4, 2), "0"),
        "dhu_16_4_3_unfused": _dhu_cfg((16, 4, 3), "0"),
    }
)


# round 4: chunk_fwd.FUSE_WU past the forward (session 22 measured "state" 2.87 -> 3.05 ms and "all" 3.59 ms on the
# backward of H16-8seqs; since then the factored v_new forms X S on the narrow side, s32/s33)
def _fuse_wu(mode):
    # (round 7 ran with an exit that set "fwd", the default before a0f200c: after the first fuse_wu_fwd pass every
    # variant, the default included, ran with "fwd"; round 8 reran it with this restore)
    saved = []

    def enter():
        from jagattn.gated_delta.triton import chunk_fwd

        saved.append(chunk_fwd.FUSE_WU)
        chunk_fwd.FUSE_WU = mode

    def exit_():
        from jagattn.gated_delta.triton import chunk_fwd

        chunk_fwd.FUSE_WU = saved.pop()

    return [(enter, exit_)]


VARIANTS.update({"fuse_wu_state": _fuse_wu("state"), "fuse_wu_all": _fuse_wu("all")})


# round 7: (a) the default now fuses the segmented recompute (H16-1seq) from its segment chains; "fuse_wu_fwd" is
# the forward-only fusion, i.e. the unfused recompute there (the old default on that row). (b) wy accumulates
# K K^T in its last key loop instead of the first (as FLA does), so that tile is not live through the V loop and
# the dA chain; the dm * kk sums of dbeta and dG move after that loop (another summation order: not bitwise).
_WY_KK_LATE = [
    (_M, _WY, "        b_kk += tl.dot(b_k, tl.trans(b_k), input_precision=DOT_PREC)\n", ""),
    (
        _M,
        _WY,
        """    b_dm = tl.where(strict, b_da * e_ts, 0.0)  # d(beta_t kk_ts) before beta
    b_db += tl.sum(b_dm * b_kk, 1)
    b_dm = b_dm * b_beta[:, None]  # gradient w.r.t. kk_ts (t > s)
    # G_t - G_s: + for the row t, - for the column s
    b_dmkk = b_dm * b_kk
    b_dg += tl.sum(b_dmkk, 1) - tl.sum(b_dmkk, 0)
""",
        """    b_dm0 = tl.where(strict, b_da * e_ts, 0.0)  # d(beta_t kk_ts) before beta
    b_dm = b_dm0 * b_beta[:, None]  # gradient w.r.t. kk_ts (t > s)
""",
    ),
    (
        _M,
        _WY,
        "        b_kc = _c(b_kh, dt, DOT_PREC, KEEP)\n",
        "        b_kc = _c(b_kh, dt, DOT_PREC, KEEP)\n        b_kk += tl.dot(b_kh, tl.trans(b_kh), input_precision=DOT_PREC)\n",
    ),
    (
        _M,
        _WY,
        "    if L2N_BWD:\n        # every thread re-reads",
        "    b_db += tl.sum(b_dm0 * b_kk, 1)\n    b_dmkk = b_dm * b_kk\n    b_dg += tl.sum(b_dmkk, 1) - tl.sum(b_dmkk, 0)\n"
        "    if L2N_BWD:\n        # every thread re-reads",
    ),
]
VARIANTS.update({"fuse_wu_fwd": _fuse_wu("fwd"), "wy_kk_late": _WY_KK_LATE})
