"""Session 31 (issue #5), for ``benchmarks/src_variant_ab.py``: the Gluon dK/dV kernel of ``hstu/triton/bwd_gluon.py``
as the default (with the Gluon dQ kernel), against the Triton dK/dV kernel, and against both Triton kernels; and the
Gluon dK/dV kernel forced where "auto" leaves the Triton one (windows)."""

import runpy
from pathlib import Path

_set = runpy.run_path(str(Path(__file__).with_name("s30_hstu_variants.py")))["_set"]

VARIANTS = {
    "triton_dkdv": [_set(GLUON_SWITCH="0")],
    "triton_both": [_set(GLUON_SWITCH="0", DQ_SWITCH="0")],
    # round 8: the Gluon dK/dV kernel forced (windows too; with a window 32 query rows a step, 3 stages)
    "gluon_dkdv_forced": [_set(GLUON_SWITCH="1")],
}
