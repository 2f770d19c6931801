"""Session 17: attention dK/dV product order, for ``benchmarks/src_variant_ab.py`` (bf16 suite rows).

``dv_late``: issue the dP^T product before the dV one. Triton 3.6 waits for every non-accumulating wgmma at once
(``warp_group_dot_wait {pendings = 0}``), so today the dP^T wait also drains the dV product issued before it,
with the ALUs idle; with dV issued after dP^T's wait it runs while the ALUs form dS^T (the accumulating dV and
dK products stay in flight until the next S^T wait). Local Triton 3.6 compile: 255 registers, stack 48 -> 32 bytes.
(Session 16's ``dp_early`` put dP^T before the exponentials as well and was slower.)
"""

_A = "jagattn.attention.triton.bwd"
_F = "_attention_bwd_dkdv_inner"

VARIANTS = {
    "dv_late": [
        (
            _A,
            _F,
            "        dv = tl.dot(pT.to(b_do.dtype), b_do, dv, input_precision=DOT_PREC)\n"
            "        b_delta = tl.load(DELTA + rows_pad)\n"
            "        dpT = tl.dot(b_v, tl.trans(b_do), input_precision=DOT_PREC)\n",
            "        b_delta = tl.load(DELTA + rows_pad)\n"
            "        dpT = tl.dot(b_v, tl.trans(b_do), input_precision=DOT_PREC)\n"
            "        dv = tl.dot(pT.to(b_do.dtype), b_do, dv, input_precision=DOT_PREC)\n",
        )
    ],
}
