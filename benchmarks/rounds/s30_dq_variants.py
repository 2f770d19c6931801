"""Session 30 (issue #4), for ``benchmarks/src_variant_ab.py``: the Gluon dQ kernel (``bwd_gluon.DQ_GLUON``) at
several tiles against the default Triton dQ kernel, and the Triton dQ kernel's 64x64 / 4-warp tile. The idea: the
dQ kernel runs at ~85% of the Gluon dK/dV kernel's per-product rate with 128 query rows on 8 warps (one program
per SM, both warpgroups in the same phase); 64 rows on 4 warps with 2 stages fit two programs per SM, whose
phases interleave like the dK/dV kernel's."""

import importlib
import runpy
from pathlib import Path


def _gluon_dq(bm, bn, stages, warps, defer=False, tpw=16, on=True):
    saved = []

    def enter():
        g = importlib.import_module("jagattn.attention.triton.bwd_gluon")
        saved[:] = [
            (g.DQ_GLUON, g.DQ_BLOCK_M, g.DQ_BLOCK_N, g.DQ_STAGES, g.DQ_WARPS, g.DQ_DEFER, g.DQ_DELTA_TPW)
        ]
        g.DQ_GLUON, g.DQ_BLOCK_M, g.DQ_BLOCK_N, g.DQ_STAGES, g.DQ_WARPS, g.DQ_DEFER, g.DQ_DELTA_TPW = (
            on,
            bm,
            bn,
            stages,
            warps,
            defer,
            tpw,
        )

    def leave():
        g = importlib.import_module("jagattn.attention.triton.bwd_gluon")
        g.DQ_GLUON, g.DQ_BLOCK_M, g.DQ_BLOCK_N, g.DQ_STAGES, g.DQ_WARPS, g.DQ_DEFER, g.DQ_DELTA_TPW = saved[0]

    return (enter, leave)


# the Triton dQ kernel with one tile put first: session 27's helper
_triton_dq = runpy.run_path(str(Path(__file__).with_name("s27_variants.py")))["_dq_tile"]


VARIANTS = {
    # round 1 (default: the Triton dQ kernel)
    "g128x64s3w8": [_gluon_dq(128, 64, 3, 8)],
    "g128x128s2w8": [_gluon_dq(128, 128, 2, 8)],
    "g64x64s2w4": [_gluon_dq(64, 64, 2, 4)],
    "g64x64s2w4_defer": [_gluon_dq(64, 64, 2, 4, defer=True)],
    "g64x64s2w4_tpw8": [_gluon_dq(64, 64, 2, 4, tpw=8)],
    "g64x128s2w4": [_gluon_dq(64, 128, 2, 4)],
    "t64x64s2w4": [_triton_dq(64, 64, 4, 2)],
    # round 2 (default: the Gluon dQ kernel 64x64 / 2 stages / 4 warps, deferred dQ wait)
    "triton_dq": [_gluon_dq(64, 64, 2, 4, defer=True, on=False)],
    "nodefer": [_gluon_dq(64, 64, 2, 4)],
    "g64x32s2w4": [_gluon_dq(64, 32, 2, 4, defer=True)],
    "g64x32s3w4": [_gluon_dq(64, 32, 3, 4, defer=True)],
}
