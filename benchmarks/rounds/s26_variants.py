"""Session 26 (issue #4): the attention backward with the Gluon dK/dV kernel (the default on Hopper since this
session, ``attention/triton/bwd_gluon.py``) against the Triton dK/dV kernel, for ``benchmarks/src_variant_ab.py``
(``default`` = Gluon where its guards hold; ``triton_dkdv`` = ``JAGATTN_ATTN_DKDV_GLUON=0``)."""

from jagattn.attention.triton import bwd_gluon


def _triton_on():
    bwd_gluon.GLUON_SWITCH = "0"


def _triton_off():
    bwd_gluon.GLUON_SWITCH = "auto"


VARIANTS = {"triton_dkdv": [(_triton_on, _triton_off)]}
