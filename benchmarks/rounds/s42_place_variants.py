"""Session 42 round 3: where the dK/dV kernel runs the contextual step of the dQ split (``bwd.CTX_PLACE``: 0 before
its loop, the default; 1 after it; 2 after it with the rows loaded before) and the reduce kernel's shape
(``REDUCE_BLOCK_D`` columns per program, ``REDUCE_STAGES`` loads in flight; default 64, 3), against the unsplit
kernels (``src_variant_ab.py --family hstu --rows ctx6-w256``)."""

from jagattn.hstu.triton import bwd as _bw


def _set(**kw):
    saved = {}

    def enter():
        for k, v in kw.items():
            saved[k] = getattr(_bw, k)
            setattr(_bw, k, v)

    def leave():
        for k, v in saved.items():
            setattr(_bw, k, v)

    return (enter, leave)


VARIANTS = {
    "nosplit": [_set(CTX_SPLIT="0")],
    "place1": [_set(CTX_PLACE=1)],
    "place2": [_set(CTX_PLACE=2)],
    "reduce_d128_s1": [_set(REDUCE_BLOCK_D=128, REDUCE_STAGES=1)],
    "reduce_d32": [_set(REDUCE_BLOCK_D=32)],
    "reduce_d16": [_set(REDUCE_BLOCK_D=16)],
}
