"""Session 42 round 1: where ctx6-w256's backward time goes (``src_variant_ab.py --family hstu --rows ctx6-w256``).

- ``c0``: the same batch with ``contextual_seq_len=0`` (other outputs, a different problem): the upper bound of what
  the contextual rows cost (the dQ kernel's first query block walks every key for them; the dK/dV kernel runs one
  masked contextual step per key block).
- ``gluon_win32`` / ``gluon_win64``: the Gluon dK/dV kernel forced with the window (``JAGATTN_HSTU_GLUON=1``;
  session 31: 32-row steps 0.922 against the Triton kernel's 0.850 ms, before session 41's clipped boxes).
- ``tw_*``: the Triton windowed dK/dV kernel at other configs (BLOCK_M x BLOCK_N, warps, stages)."""

import triton

import jagattn
from jagattn.hstu.triton import bwd as _bw
from jagattn.hstu.triton import bwd_gluon as _bg


def _ctx0():
    orig = jagattn.hstu_attention

    def patched(*a, **kw):
        kw["contextual_seq_len"] = 0
        return orig(*a, **kw)

    return (
        lambda: setattr(jagattn, "hstu_attention", patched),
        lambda: setattr(jagattn, "hstu_attention", orig),
    )


def _gluon(bm, stages):
    saved = {}

    def enter():
        saved.update(s=_bg.GLUON_SWITCH, bm=_bg.WIN_BLOCK_M, st=_bg.WIN_STAGES)
        _bg.GLUON_SWITCH, _bg.WIN_BLOCK_M, _bg.WIN_STAGES = "1", bm, stages

    def leave():
        _bg.GLUON_SWITCH, _bg.WIN_BLOCK_M, _bg.WIN_STAGES = saved["s"], saved["bm"], saved["st"]

    return (enter, leave)


def _tcfg(bm, bn, warps, stages):
    tuner = _bw._bwd_small_window
    saved = {}

    def enter():
        saved["c"] = tuner.configs
        tuner.configs = [triton.Config({"BLOCK_M": bm, "BLOCK_N": bn}, num_warps=warps, num_stages=stages)]
        tuner.cache.clear()

    def leave():
        tuner.configs = saved["c"]
        tuner.cache.clear()

    return (enter, leave)


VARIANTS = {
    "c0": [_ctx0()],
    "gluon_win32": [_gluon(32, 3)],
    "gluon_win64": [_gluon(64, 2)],
    "tw_32x64_4w_4s": [_tcfg(32, 64, 4, 4)],
    "tw_32x64_4w_2s": [_tcfg(32, 64, 4, 2)],
    "tw_64x64_4w_3s": [_tcfg(64, 64, 4, 3)],
    "tw_32x128_8w_3s": [_tcfg(32, 128, 8, 3)],
}
