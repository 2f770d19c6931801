"""Triton kernels of HSTU attention: ``fwd.py`` (forward, cached forward, deterministic dQ) and
``bwd.py`` (dK/dV per key block, optional fp32 atomic dQ). ``mask.py`` holds the id-space mask
of SPEC.md section 2 and the scalar bounds the kernels use to skip invisible blocks."""
