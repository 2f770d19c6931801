"""Session 41: how the HSTU Gluon backward kernels treat a box's rows past its sequence's end (``bwd_gluon.DKDV_CLIP``
/ ``DQ_CLIP``: 0 zeroed in shared memory, 1 every box through the 3-D ``host_desc_to_end`` view, 2 only the boxes
that reach past the end), for ``src_variant_ab.py`` (same process, alternated). Defaults: dK/dV 1, dQ 0."""

from jagattn.hstu.triton import bwd_gluon as _bg


def _set(attr, value):
    default = getattr(_bg, attr)
    return (lambda: setattr(_bg, attr, value), lambda: setattr(_bg, attr, default))


VARIANTS = {
    "dkdv0": [_set("DKDV_CLIP", 0)],
    "dkdv2": [_set("DKDV_CLIP", 2)],
    "dq1": [_set("DQ_CLIP", 1)],
    "dq2": [_set("DQ_CLIP", 2)],
}
# round 3 also had "dq_qregs1" / "dq_qregs2" (bwd_gluon.DQ_Q_REGS, q / q and dO as register operands): that switch
# existed only in commits fafcfd5..40794ce (removed in e64fb90: dq wrong at Dq = 64 on Triton 3.6)
