"""Session 41 (prepared for the next session): the attention Gluon dK/dV kernel's q / dO boxes clipped at the
sequence's end by TMA (``attention.triton.bwd_gluon.DKDV_CLIP``: 1 every box through ``host_desc_to_end``, 2 only the
boxes past the end) against the default 0 (2-D boxes, the next sequence's rows zeroed in shared memory), for
``src_variant_ab.py --family attention`` (same process, alternated)."""

from jagattn.attention.triton import bwd_gluon as _bg


def _set(value):
    return (lambda: setattr(_bg, "DKDV_CLIP", value), lambda: setattr(_bg, "DKDV_CLIP", 0))


VARIANTS = {"clip1": [_set(1)], "clip2": [_set(2)]}
