"""Session 40: the persistent Gluon dQ schedule (``bwd_gluon.DQ_PERSIST``) against one program per query block, for
``src_variant_ab.py`` (same process, alternated)."""

from jagattn.hstu.triton import bwd_gluon as _bg


def _enter():
    _bg.DQ_PERSIST = "1"


def _leave():
    _bg.DQ_PERSIST = "0"


VARIANTS = {"dq_persist": [(_enter, _leave)]}
