"""Session 14 round 1: Triton's automatic warp specialization (``tl.range(..., warp_specialize=True)``)
on the main loop of each HSTU and attention kernel, for ``benchmarks/src_variant_ab.py``."""

_H_FWD = ("jagattn.hstu.triton.fwd", "_hstu_fwd_kernel")
_H_BWD = ("jagattn.hstu.triton.bwd", "_hstu_bwd_kernel")
_A_FWD = ("jagattn.attention.triton.fwd", "_attention_fwd_kernel")
_A_DQ = ("jagattn.attention.triton.bwd", "_attention_bwd_dq_inner")
_A_DKDV = ("jagattn.attention.triton.bwd", "_attention_bwd_dkdv_inner")

VARIANTS = {
    # HSTU forward kernel (MODE 0: forward, MODE 1: the backward's dQ kernel)
    "h_ws_fwd": [(*_H_FWD, "for t in range(0, nb + n_diag):",
                  "for t in tl.range(0, nb + n_diag, warp_specialize=True):")],
    "h_ws_bwd": [(*_H_BWD, "for t in range(0, n_ctx + nb + n_full):",
                  "for t in tl.range(0, n_ctx + nb + n_full, warp_specialize=True):")],
    "a_ws_fwd": [(*_A_FWD, "for n0 in range(n_start, n_stop, BLOCK_N):",
                  "for n0 in tl.range(n_start, n_stop, BLOCK_N, warp_specialize=True):")],
    "a_ws_dq": [(*_A_DQ, "for n0 in range(n_lo, n_hi, BLOCK_N):",
                 "for n0 in tl.range(n_lo, n_hi, BLOCK_N, warp_specialize=True):")],
    "a_ws_dkdv": [(*_A_DKDV, "for it in range(0, GROUP * n_blocks):",
                   "for it in tl.range(0, GROUP * n_blocks, warp_specialize=True):")],
}  # fmt: skip
