"""Session 19 round 11 (issue #4): session 14's attention forward / dQ source variants again, now that
``src_variant_ab.py`` recompiles autotuner-wrapped kernels (in session 14 these variants never reached the
forward and dQ kernels: the A/B compared the default with itself). From ``s14_variants_tma.py``: ``a_desc``
(K/V through device-side TMA descriptors with the sequence's row bound in the forward); from
``s14_variants_ws.py``: ``a_ws_fwd`` / ``a_ws_dq`` (``warp_specialize=True`` on the main loops); from
``s14_variants_bwd.py``: ``dq_desc`` (k/v through TMA descriptors in the dQ kernel)."""

import runpy

_TMA = runpy.run_path("benchmarks/rounds/s14_variants_tma.py")["VARIANTS"]
_WS = runpy.run_path("benchmarks/rounds/s14_variants_ws.py")["VARIANTS"]
_BWD = runpy.run_path("benchmarks/rounds/s14_variants_bwd.py")["VARIANTS"]

VARIANTS = {
    "a_desc": _TMA["a_desc"],
    "a_ws_fwd": _WS["a_ws_fwd"],
    "a_ws_dq": _WS["a_ws_dq"],
    "dq_desc": _BWD["dq_desc"],
}
