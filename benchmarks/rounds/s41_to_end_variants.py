"""Session 41: the HSTU Gluon backward kernels' boxes clipped at the sequence's end by TMA (the dK/dV default)
against 2-D boxes with the next sequence's rows zeroed in shared memory (sessions 27-40), for
``src_variant_ab.py`` (same process, alternated)."""

from jagattn.hstu.triton import bwd_gluon as _bg


def _enter():
    _bg.DKDV_CLIP, _bg.DQ_CLIP = 0, 0


def _leave():
    _bg.DKDV_CLIP, _bg.DQ_CLIP = 1, 0


# round 1 ran on 6c06a3e, where one switch ``bwd_gluon.TO_END`` (True: both kernels' walked boxes through the 3-D view)
# was the default and this variant set it False; on later trees the same comparison for dK/dV is DKDV_CLIP 1 -> 0
# (the dQ kernel defaults to the 2-D boxes since 8c8e649)
VARIANTS = {"zeroed_2d": [(_enter, _leave)]}
