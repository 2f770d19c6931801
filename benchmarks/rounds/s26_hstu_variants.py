"""Session 26 (issue #5): the HSTU backward with the Gluon dK/dV kernel (``hstu/triton/bwd_gluon.py``) against the
Triton dK/dV kernel, for ``benchmarks/src_variant_ab.py``. Rounds 11-12 ran with the Gluon kernel as the default
(``triton_dkdv`` = ``JAGATTN_HSTU_GLUON=0``); it is opt-in since (``gluon_dkdv`` = ``JAGATTN_HSTU_GLUON=1``)."""

from jagattn.hstu.triton import bwd_gluon


def _set(**values):
    saved = {}

    def enter():
        for name, value in values.items():
            saved[name] = getattr(bwd_gluon, name)
            setattr(bwd_gluon, name, value)

    def leave():
        for name, value in saved.items():
            setattr(bwd_gluon, name, value)

    return [(enter, leave)]


VARIANTS = {
    "triton_dkdv": _set(GLUON_SWITCH="0"),
    "gluon_dkdv": _set(GLUON_SWITCH="1"),
    # 128 key rows on 8 warps (the Triton kernel's own tile; one program per SM)
    "g_n128w8": _set(BLOCK_N=128, WARPS=8),
}
