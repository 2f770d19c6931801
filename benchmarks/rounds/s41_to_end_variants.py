"""Session 41: the HSTU Gluon backward kernels' boxes clipped at the sequence's end by TMA (``bwd_gluon.TO_END``, the
new default) against 2-D boxes with the next sequence's rows zeroed in shared memory (sessions 27-40), for
``src_variant_ab.py`` (same process, alternated)."""

from jagattn.hstu.triton import bwd_gluon as _bg


def _enter():
    _bg.TO_END = False


def _leave():
    _bg.TO_END = True


VARIANTS = {"zeroed_2d": [(_enter, _leave)]}
