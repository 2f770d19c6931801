"""Session 42 round 4: the dQ split's contextual step as the dK/dV loop's first step (``bwd.CTX_PLACE = 3``: BLOCK_M
rows, pipelined with the rest, its dQ part under a run-time branch) against the peeled 16-row step before the loop
(0, the default) and the unsplit kernels (``src_variant_ab.py --family hstu --rows ctx6-w256``)."""

from jagattn.hstu.triton import bwd as _bw


def _set(attr, value):
    saved = []
    return (
        lambda: (saved.append(getattr(_bw, attr)), setattr(_bw, attr, value)),
        lambda: setattr(_bw, attr, saved.pop()),
    )


VARIANTS = {"nosplit": [_set("CTX_SPLIT", "0")], "place3": [_set("CTX_PLACE", 3)]}
