"""Session 30 (issue #5), for ``benchmarks/src_variant_ab.py``: the Gluon dQ kernel of ``hstu/triton/bwd_gluon.py``
(64 query rows on 4 warps, two programs per SM, dQ's product deferred; the attention dQ kernel's schedule, 15-32%
faster than its Triton twin) against the Triton dQ kernel (the forward kernel's ``MODE == 1``), alone and with the
opt-in Gluon dK/dV kernel."""

import importlib


def _set(**values):
    saved = {}

    def enter():
        g = importlib.import_module("jagattn.hstu.triton.bwd_gluon")
        for name, value in values.items():
            saved[name] = getattr(g, name)
            setattr(g, name, value)

    def leave():
        g = importlib.import_module("jagattn.hstu.triton.bwd_gluon")
        for name, value in saved.items():
            setattr(g, name, value)

    return (enter, leave)


VARIANTS = {
    # round 6 ran these with the switch then called DQ_GLUON (True / default False); since then the Gluon dQ kernel is
    # the default (DQ_SWITCH "auto") and "triton_dq" measures the other way round
    "gluon_dq": [_set(DQ_SWITCH="auto")],
    "gluon_dq_dkdv": [_set(DQ_SWITCH="auto", GLUON_SWITCH="1")],
    "gluon_dkdv": [_set(DQ_SWITCH="0", GLUON_SWITCH="1")],
    "triton_dq": [_set(DQ_SWITCH="0")],
}
