"""Session 42 round 2: the contextual rows' dQ split (``hstu/triton/bwd.py`` ``ctx_split``, default on) against
the unsplit kernels, with the Gluon dQ kernel (default) and the Triton one (``src_variant_ab.py --family hstu``)."""

from jagattn.hstu.triton import bwd as _bw
from jagattn.hstu.triton import bwd_gluon as _bg


def _set(mod, attr, value):
    saved = []
    return (
        lambda: (saved.append(getattr(mod, attr)), setattr(mod, attr, value)),
        lambda: setattr(mod, attr, saved.pop()),
    )


VARIANTS = {
    "nosplit": [_set(_bw, "CTX_SPLIT", "0")],
    "split_tritondq": [_set(_bg, "DQ_SWITCH", "0")],
    "nosplit_tritondq": [_set(_bw, "CTX_SPLIT", "0"), _set(_bg, "DQ_SWITCH", "0")],
}
