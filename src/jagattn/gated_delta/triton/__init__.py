"""Triton kernels of the gated delta rule: ``chunk_fwd.py`` / ``chunk_bwd.py`` (chunked WY kernels,
scalar gate g), ``chunk_gk.py`` (chunked kernels with per-key gates gk, g folded in), ``recurrent.py``
(fused token loop for short sequences, forward only), ``l2norm.py`` (q/k normalisation, fwd + bwd)
and ``common.py`` (shared tile helpers, launch configs)."""
