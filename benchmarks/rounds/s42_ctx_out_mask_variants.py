"""For the next session (after ``git apply benchmarks/rounds/s42_ctx_out_mask.diff``): the split dK/dV kernel's loop
mask without the contextual rows' term (its rows are never contextual once ``ctx_split`` peels them: 161 -> 121
instructions in the masked branch, Triton 3.6 sm_90 SASS, 250 registers, no spill) against the same kernel with the
term (``src_variant_ab.py --family hstu --rows ctx6-w256``)."""

VARIANTS = {
    "with_ctx_term": [
        (
            "jagattn.hstu.triton.bwd",
            "_hstu_bwd_kernel",
            "BLOCK_M,\n            CTX_KS > 0,\n",
            "BLOCK_M,\n            False,\n",
        )
    ],
}
