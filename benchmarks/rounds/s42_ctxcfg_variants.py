"""Session 42 round 5: the Triton dK/dV kernel's configs with the dQ split (``bwd._bwd_small_ctx``, first config
32 x 64, 4 warps, 3 stages; ``src_variant_ab.py --family hstu --rows ctx6-w256``). Names: tBM_BN_warps_stages."""

import triton

from jagattn.hstu.triton import bwd as _bw


def _cfg(bm, bn, warps, stages):
    tuner = _bw._bwd_small_ctx
    saved = {}

    def enter():
        saved["c"] = tuner.configs
        tuner.configs = [triton.Config({"BLOCK_M": bm, "BLOCK_N": bn}, num_warps=warps, num_stages=stages)]
        tuner.cache.clear()

    def leave():
        tuner.configs = saved["c"]
        tuner.cache.clear()

    return (enter, leave)


CONFIGS = [(64, 64, 8, 3), (64, 64, 8, 2), (32, 64, 8, 3), (16, 64, 4, 3), (16, 64, 4, 4), (32, 32, 4, 3),
           (64, 32, 4, 3), (32, 64, 4, 4), (16, 32, 4, 3)]  # fmt: skip
VARIANTS = {"t{}_{}_{}_{}".format(*c): [_cfg(*c)] for c in CONFIGS}
