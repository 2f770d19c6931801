"""Session 26 (issue #4): the attention backward's Gluon kernels (``attention/triton/bwd_gluon.py``, the default on
Hopper since this session) against the Triton kernels, for ``benchmarks/src_variant_ab.py``. Round 3 ran
``triton_dkdv`` when only the dK/dV kernel was in Gluon (``default`` = Gluon dK/dV); round 4 the dK/dV tiles; round 5
``triton_all`` (``JAGATTN_ATTN_GLUON=0``), ``triton_dq`` (Triton dQ + Gluon dK/dV) and the dQ kernel's settings;
round 6 ``early_delta``."""

from jagattn.attention.triton import bwd_gluon


def _triton_on():
    bwd_gluon.GLUON_SWITCH = "0"


def _triton_off():
    bwd_gluon.GLUON_SWITCH = "auto"


VARIANTS = {"triton_dkdv": [(_triton_on, _triton_off)], "triton_all": [(_triton_on, _triton_off)]}


def module_setter(module, **values):
    """A src_variant_ab variant that sets ``module``'s attributes to ``values`` around the run."""
    saved = {}

    def enter():
        for name, value in values.items():
            saved[name] = getattr(module, name)
            setattr(module, name, value)

    def leave():
        for name, value in saved.items():
            setattr(module, name, value)

    return [(enter, leave)]


def _set(**values):
    return module_setter(bwd_gluon, **values)


# round 5 (the Gluon dQ kernel of benchmarks/rounds/s26_round5_gluon_dq.diff, since removed): triton_dq =
# _set(DQ_GLUON=False), dq_defer = _set(DQ_DEFER=True), dq_s2 = _set(DQ_STAGES=2), dq_n128s2 = _set(DQ_BLOCK_N=128,
# DQ_STAGES=2); round 6: delta loaded with lse2 at the top of the dK/dV step (local compile, causal D = 128: spill
# 216 -> 144 B)
# (early_delta=_set(EARLY_DELTA=True), the flag removed when round 7 made it the only order)


def _tile(bm, bn, stages, warps):
    saved = {}

    def enter():
        saved.update(
            BLOCK_M=bwd_gluon.BLOCK_M,
            BLOCK_N=bwd_gluon.BLOCK_N,
            STAGES=bwd_gluon.STAGES,
            WARPS=bwd_gluon.WARPS,
        )
        bwd_gluon.BLOCK_M, bwd_gluon.BLOCK_N, bwd_gluon.STAGES, bwd_gluon.WARPS = bm, bn, stages, warps

    def leave():
        for name, value in saved.items():
            setattr(bwd_gluon, name, value)

    return [(enter, leave)]


# Gluon tiles (BLOCK_M query rows, BLOCK_N key rows, stages, warps); local Triton 3.6 compile, causal D = 128:
# 64x64 s2 w4 (default) 255 registers + 216 B spill, 98 KB; 32x64 s3 w4 230 / 0 B, 82 KB; 32x64 s4 w4 226 / 0 B,
# 98 KB; 32x128 s3 w8 230 / 0 B, 115 KB
VARIANTS.update(
    g_m32s3=_tile(32, 64, 3, 4),
    g_m32s4=_tile(32, 64, 4, 4),
    g_m32n128s3w8=_tile(32, 128, 3, 8),
)


def _env(name, value):
    import os

    saved = {}

    def enter():
        saved["v"] = os.environ.get(name)
        os.environ[name] = value

    def leave():
        if saved["v"] is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = saved["v"]

    return [(enter, leave)]


# round 7: the Gluon dK/dV key blocks launched heaviest first (a device-side argsort), and the slot-major grid for
# GQA (dkdv_schedule picks head-major for the Triton kernel's sake)
# (lpt=_set(ORDER="lpt"): the order code removed after round 7, kept as benchmarks/rounds/s26_round7_lpt_order.diff)
VARIANTS.update(slot_major=_env("JAGATTN_ATTN_HEAD_MAJOR", "0"))

# round 10: the freed q / dO stage refilled at the top of the step (more lead for the TMA), and the head-major grid for
# MHA too (dkdv_schedule picks it for GQA only)
# (early_refill=_set(EARLY_REFILL=True): the switch removed after round 10 measured it neutral)
VARIANTS.update(head_major=_env("JAGATTN_ATTN_HEAD_MAJOR", "1"))
