"""Session 40: the persistent Gluon dK/dV schedule (``bwd_gluon.PERSIST``) against one program per key block, for
``src_variant_ab.py`` (same process, alternated). ``persist_win`` also forces the Gluon dK/dV kernel on windowed rows
(``GLUON_SWITCH="1"``), whose default is the Triton kernel."""

from jagattn.hstu.triton import bwd_gluon as _bg


def _set(**kw):
    old = {k: getattr(_bg, k) for k in kw}

    def enter():
        for k, v in kw.items():
            setattr(_bg, k, v)

    def leave():
        for k, v in old.items():
            setattr(_bg, k, v)

    return enter, leave


VARIANTS = {
    "persist": [_set(PERSIST="1")],
    "gluon_win": [_set(GLUON_SWITCH="1")],
    "persist_win": [_set(PERSIST="1", GLUON_SWITCH="1")],
}
