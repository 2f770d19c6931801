"""Prepared in session 25 for the next session (issue #6), for ``benchmarks/src_variant_ab.py`` and
``benchmarks/rounds/s25_k64_case.py --variant``: the state pass's ``W S`` (and the factored ``X S``) with S split
into bf16 hi + lo parts, two bf16 tensor-core products instead of one on S rounded to bf16 (~16-bit S).

Why: session 25 round 10, the speed path's K = 64 SPEC miss (final_state 1.05x the allowance) is fixed only by fp32
state operands in the state pass (``JAGATTN_GD_BF16_KEEP=fwd_h``: 0.90, but the forward 0.80 -> 1.59 ms on
H16-8seqs); storing S / v_new in fp32 does not help. Local compile (Triton 3.6, sm_90) of this variant: shared memory
unchanged; spill 296 -> 544 B in the fused-output forward and 0 -> 184 B in the recompute at V blocks of 64, none at
16. The patched kernels passed the gated delta CPU tests named in s26_prepared_round1.sh (session 25). Not measured.
The backward's recompute takes the same split (its v_new must be the forward's), so gradients change too.
"""

_M = "jagattn.gated_delta.triton.chunk_fwd"

VARIANTS = {
    "s_hilo": [
        (
            _M,
            "_h_chain",
            "            b_vn = b_u - tl.dot(\n"
            "                _c(b_w, dt, DOT_PREC, KEEP), _c(b_h, dt, DOT_PREC, KEEP), input_precision=DOT_PREC\n"
            "            )\n",
            "            b_hh = _c(b_h, dt, DOT_PREC, KEEP)\n"
            "            b_vn = b_u - tl.dot(_c(b_w, dt, DOT_PREC, KEEP), b_hh, input_precision=DOT_PREC)\n"
            "            b_vn -= tl.dot(\n"
            "                _c(b_w, dt, DOT_PREC, KEEP), (b_h - b_hh.to(tl.float32)).to(dt), input_precision=DOT_PREC\n"
            "            )\n",
        ),
        (
            _M,
            "_vnew_factored",
            "    b_xs = tl.dot(_c(b_x, dt, DOT_PREC, KEEP), _c(b_h, dt, DOT_PREC, KEEP), input_precision=DOT_PREC)\n",
            "    b_hh = _c(b_h, dt, DOT_PREC, KEEP)\n"
            "    b_xs = tl.dot(_c(b_x, dt, DOT_PREC, KEEP), b_hh, input_precision=DOT_PREC)\n"
            "    b_xs += tl.dot(_c(b_x, dt, DOT_PREC, KEEP), (b_h - b_hh.to(tl.float32)).to(dt), input_precision=DOT_PREC)\n",
        ),
    ],
}
