"""Session 22 round 1, for ``benchmarks/src_variant_ab.py`` (with ``--profile`` for per-kernel times).

- ``atomic_dq`` (hstu, issue #5): the opt-in fused dQ path (``jagattn.hstu.ops.ATOMIC_DQ_DEFAULT``: dQ added
  by fp32 atomics inside the dK/dV kernel, 5 matmul units instead of 7) against the default dQ kernel; last
  measured in session 6 (H200, within -2..+6%), before sessions 12-20 reshaped both backward kernels.
- ``dq_<tile>`` (attention, issue #4): another tile of ``bwd.DQ_GPU_TILES`` first for the dQ kernel (the
  list's order was set before the dQ kernel got its TMA K/V loads in session 19).
"""

import importlib


def _hstu_atomic():
    saved = []

    def enter():
        ops = importlib.import_module("jagattn.hstu.ops")
        saved[:] = [ops.ATOMIC_DQ_DEFAULT]
        ops.ATOMIC_DQ_DEFAULT = True

    def leave():
        importlib.import_module("jagattn.hstu.ops").ATOMIC_DQ_DEFAULT = saved[0]

    return (enter, leave)


def _dq_first(index):
    saved = []

    def enter():
        bwd = importlib.import_module("jagattn.attention.triton.bwd")
        tuner = bwd._attention_bwd_dq_kernel
        saved[:] = [list(tuner.configs)]
        cfgs = list(tuner.configs)
        tuner.configs = [cfgs[index], *cfgs[:index], *cfgs[index + 1 :]]

    def leave():
        importlib.import_module("jagattn.attention.triton.bwd")._attention_bwd_dq_kernel.configs = saved[0]

    return (enter, leave)


VARIANTS = {
    "atomic_dq": [_hstu_atomic()],
    "dq_128x64s4": [_dq_first(1)],
    "dq_128x32r128": [_dq_first(2)],
    "dq_64x64s2": [_dq_first(3)],
}
