"""Session 26 (issue #5): the HSTU backward with the Gluon dK/dV kernel (``hstu/triton/bwd_gluon.py``) against the
Triton dK/dV kernel, for ``benchmarks/src_variant_ab.py``. Rounds 11-12 ran with the Gluon kernel as the default
(``triton_dkdv`` = ``JAGATTN_HSTU_GLUON=0``); it is opt-in since (``gluon_dkdv`` = ``JAGATTN_HSTU_GLUON=1``)."""

import os
import sys

from jagattn.hstu.triton import bwd_gluon

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from s26_variants import module_setter  # noqa: E402


def _set(**values):
    return module_setter(bwd_gluon, **values)


VARIANTS = {
    "triton_dkdv": _set(GLUON_SWITCH="0"),
    "gluon_dkdv": _set(GLUON_SWITCH="1"),
    # 128 key rows on 8 warps (the Triton kernel's own tile; one program per SM)
    "g_n128w8": _set(BLOCK_N=128, WARPS=8),
}
