"""Session 27 (issue #4), for ``benchmarks/src_variant_ab.py``: dQ kernel tiles that ``bwd.DQ_GPU_TILES`` does not
list, put first (with ``JAGATTN_AUTOTUNE=0`` the first fitting config runs). The dQ kernel is ~45% of the backward
on the mean-8192 rows (session 26 round 5: 2.44-2.48 ms of 5.3-5.4) at ~75% of the dK/dV kernel's matmul rate;
session 26's Gluon dQ kernel read 3% faster with 128-key tiles and 2 stages (``dq_n128s2``)."""

import importlib

import triton


def _dq_tile(bm, bn, warps, stages, maxnreg=None):
    saved = []

    def enter():
        tuner = importlib.import_module("jagattn.attention.triton.bwd")._attention_bwd_dq_kernel
        saved[:] = [list(tuner.configs)]
        cfg = triton.Config(
            {"BLOCK_M": bm, "BLOCK_N": bn}, num_warps=warps, num_stages=stages, maxnreg=maxnreg
        )
        tuner.configs = [cfg, *saved[0]]
        tuner.cache.clear()

    def leave():
        tuner = importlib.import_module("jagattn.attention.triton.bwd")._attention_bwd_dq_kernel
        tuner.configs = saved[0]
        tuner.cache.clear()

    return (enter, leave)


VARIANTS = {
    "dq_128x128s2": [_dq_tile(128, 128, 8, 2)],
    "dq_128x64s2": [_dq_tile(128, 64, 8, 2)],
    "dq_64x128s2w4": [_dq_tile(64, 128, 4, 2)],
}
