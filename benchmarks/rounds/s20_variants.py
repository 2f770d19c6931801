"""Session 20 (issues #4, #5): the new defaults against the old code paths, for ``benchmarks/src_variant_ab.py``.

- ``fp32_bwd`` (HSTU): the backward scores in fp32 (``JAGATTN_HSTU_PACKED_BWD=0``) against the packed bf16x2
  backward (``mask._silu_a_ds_bf16x2``), which the default now takes on the suite rows (mean length >= 256).
- ``dq_ptr`` (attention): the dQ kernel's K/V through pointer loads (``JAGATTN_ATTN_DQ_TMA=0``) against its TMA
  descriptor loads.
"""

import importlib


def _set(module, name, value):
    saved = []

    def enter():
        m = importlib.import_module(module)
        saved[:] = [getattr(m, name)]
        setattr(m, name, value)

    def leave():
        setattr(importlib.import_module(module), name, saved[0])

    return (enter, leave)


VARIANTS = {
    "fp32_bwd": [_set("jagattn.hstu.triton.fwd", "PACKED_BWD", "0")],
    "dq_ptr": [_set("jagattn.attention.triton.bwd", "DQ_TMA", "0")],
}
