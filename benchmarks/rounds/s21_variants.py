"""Session 21 (issue #4): dK/dV tiles with the TMA q/dO loads, for ``benchmarks/src_variant_ab.py``.

Since round 1 the TMA loads run at every length (``bwd.dkdv_schedule`` drops the long-keys tile where they
are taken), on the 64x64 4-warp tile chosen before TMA. These variants put another tile first (through the
prune's long-keys ordering: ``LONG_KEYS_TILE`` patched, ``dkdv_schedule`` forced to report long keys) with
the TMA loads kept on: ``long_tma`` (64x128, 8 warps, 3 stages: the old long tile), ``t128s2`` (64x128, 8
warps, 2 stages: session 2's non-causal winner on the H200), ``t32_128`` (32x128, 8 warps, 3 stages).
The grid order stays what the schedule picked (head-major with GQA). Round 4: ``s1`` / ``s3`` / ``s4``, the 64x64
4-warp tile with 1 / 3 / 4 pipeline stages instead of 2.
"""

import importlib

_B = "jagattn.attention.triton.bwd"


def _tile_first(tile):
    saved = []

    def enter():
        bwd = importlib.import_module(_B)
        saved[:] = [bwd.dkdv_schedule, bwd.LONG_KEYS_TILE]
        real = saved[0]

        def schedule(tk, batch, group, window_left, tma=False):
            _, head_major = real(tk, batch, group, window_left, tma)
            return 1, head_major

        bwd.dkdv_schedule = schedule
        bwd.LONG_KEYS_TILE = tile

    def leave():
        bwd = importlib.import_module(_B)
        bwd.dkdv_schedule, bwd.LONG_KEYS_TILE = saved

    return (enter, leave)


VARIANTS = {
    "long_tma": [_tile_first((64, 128, 8, 3))],
    "t128s2": [_tile_first((64, 128, 8, 2))],
    "t32_128": [_tile_first((32, 128, 8, 3))],
}


def _stages_first(stages):
    """Round 4: the default 64x64 4-warp tile with another pipeline depth, put first in the dK/dV kernel's
    config list (the autotuner's per-key cache cleared on entry and exit)."""
    saved = []

    def enter():
        import triton

        at = importlib.import_module(_B)._attention_bwd_dkdv_kernel
        cfg = triton.Config({"BLOCK_M": 64, "BLOCK_N": 64, "DQ_T": True}, num_warps=4, num_stages=stages)
        saved[:] = [list(at.configs)]
        at.configs[:] = [cfg, *saved[0]]
        at.cache.clear()

    def leave():
        at = importlib.import_module(_B)._attention_bwd_dkdv_kernel
        at.configs[:] = saved[0]
        at.cache.clear()

    return (enter, leave)


VARIANTS.update({"s1": [_stages_first(1)], "s3": [_stages_first(3)], "s4": [_stages_first(4)]})
