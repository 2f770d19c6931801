"""Prepared in session 24 for the next session (issue #6), for ``benchmarks/src_variant_ab.py``: dhu's dS store address.

Session 24's Nsight Compute source page of ``_gated_delta_bwd_dhu_kernel`` (``benchmarks/results/2026-11-26-s24-h200-
round11/gd_dhu_sass.csv``, H16-8seqs) had 12% of all stall samples on one ``IMAD.IADD`` of the dS store's address,
waiting for ``LDL R185, [R1+0x8]``: three spilled loop-invariant address parts reloaded at the top of every chunk step.
``dhu_ptr`` forms the store offset with the chunk index in int32 and one int64 product
(``((slot0 + i_t) * HV + i_hv).to(int64) * (K * V) + o_kv``) and the pointer once, instead of the int64 chain
``((slot0 + i_t).to(int64) * HV + i_hv) * K * V`` added to ``DHBUF`` at the store. Local compile (Triton 3.6, sm_90,
``compile_check.py --ttgir``, bf16 K = V = 128): stack 40 -> 32 bytes, static LDL 10 -> 8, the three LDL at the
step's top gone (five others now sit after the step's first HGMMA). The same arithmetic: the patched kernel passed
29 gated delta CPU tests (dh_split bitwise, reference, fuse_dv bitwise, gate sums; interpreter) in session 24, and
the gradients must be bitwise the default's on the device. Not measured (no device time left in session 24).
"""

_M = "jagattn.gated_delta.triton.chunk_bwd"
_F = "_gated_delta_bwd_dhu_kernel"

VARIANTS = {
    "dhu_ptr": [
        (
            _M,
            _F,
            "        p_dh = ((slot0 + i_t).to(tl.int64) * HV + i_hv) * K * V + o_kv\n",
            "        o_dh = ((slot0 + i_t) * HV + i_hv).to(tl.int64) * (K * V) + o_kv\n"
            "        p_dh = DHBUF + o_dh\n",
        ),
        (
            _M,
            _F,
            "            tl.store(DHBUF + p_dh, b_dh_hi, mask=m_kv)\n"
            "            tl.store(DHLO + p_dh, (b_dh - b_dh_hi.to(tl.float32)).to(DHLO.dtype.element_ty), mask=m_kv)\n"
            "        else:\n"
            "            tl.store(DHBUF + p_dh, b_dh.to(DHBUF.dtype.element_ty), mask=m_kv)\n",
            "            tl.store(p_dh, b_dh_hi, mask=m_kv)\n"
            "            tl.store(DHLO + o_dh, (b_dh - b_dh_hi.to(tl.float32)).to(DHLO.dtype.element_ty), mask=m_kv)\n"
            "        else:\n"
            "            tl.store(p_dh, b_dh.to(DHBUF.dtype.element_ty), mask=m_kv)\n",
        ),
    ],
}
