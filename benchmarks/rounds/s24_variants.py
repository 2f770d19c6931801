"""Session 24 (issue #4): the atomic dQ path with bulk TMA reductions, for ``benchmarks/src_variant_ab.py``.

``bwd.dq_reduce_tma``: the dK/dV kernel adds each fp32 dQ tile into the chunk buffer with one
``cp.reduce.async.bulk`` from shared memory (and loads q / dO through descriptors), instead of per-element
``red.global.add`` from every thread. Variants (JAGATTN_ATTN_DQ=atomic; the default is the separate dQ kernel):

- ``tma1``: one chunk (an fp32 ``[Tq, Hq, D]`` buffer: +256 MiB at 32k tokens x 16 heads; above Flex's peak)
  with the atomic kernel's first-listed tile (32x128, 8 warps, 3 stages, dQ^T);
- ``tma1_<tile>``: the same with another tile first (``m64n64`` = 64x64 4 warps 2 stages dQ^T, ``m64n128f`` =
  64x128 8 warps 2 stages dQ not transposed, ``m64n128t`` = the same with dQ^T);
- ``tma_cap``: the memory-capped chunks of ``dq_chunk_kv_heads`` (64 MiB: 4 kv heads at Hkv 16, 1 at Hkv 4);
- ``ptr1``: one chunk through the per-element atomics and pointer loads (the path before this session).

Round 3 (H200, `benchmarks/results/2026-11-26-s24-h200-round3`): every variant slower than the default, the TMA
reductions slower than the per-element atomics (backward x0.67-0.77 vs x0.75-0.84); the change was reverted. To
rerun, apply ``benchmarks/rounds/s24_round3_dq_tma_reduce.diff`` (against 0e50052) first.
"""

import importlib
import os

_B = "jagattn.attention.triton.bwd"


def _atomic(heads=None, tile=None, reduce_tma="auto"):
    saved = []

    def enter():
        import triton

        bwd = importlib.import_module(_B)
        at = bwd._attention_bwd_dkdv_dq_kernel
        saved[:] = [dict(os.environ), bwd.DQ_REDUCE_TMA, list(at.configs)]
        os.environ["JAGATTN_ATTN_DQ"] = "atomic"
        if heads is not None:
            os.environ["JAGATTN_ATTN_DQ_HEADS"] = str(heads)
        bwd.DQ_REDUCE_TMA = reduce_tma
        if tile is not None:
            bm, bn, w, s, t = tile
            cfg = triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "DQ_T": t}, num_warps=w, num_stages=s)
            at.configs[:] = [cfg, *saved[2]]
        at.cache.clear()

    def leave():
        bwd = importlib.import_module(_B)
        at = bwd._attention_bwd_dkdv_dq_kernel
        os.environ.clear()
        os.environ.update(saved[0])
        bwd.DQ_REDUCE_TMA = saved[1]
        at.configs[:] = saved[2]
        at.cache.clear()

    return (enter, leave)


VARIANTS = {
    "tma1": [_atomic(heads=1024)],
    "tma1_m64n64": [_atomic(heads=1024, tile=(64, 64, 4, 2, True))],
    "tma1_m64n128f": [_atomic(heads=1024, tile=(64, 128, 8, 2, False))],
    "tma1_m64n128t": [_atomic(heads=1024, tile=(64, 128, 8, 2, True))],
    "tma_cap": [_atomic()],
    "ptr1": [_atomic(heads=1024, reduce_tma="0")],
}
