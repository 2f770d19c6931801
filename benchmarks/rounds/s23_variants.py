"""Session 23, for ``benchmarks/src_variant_ab.py`` (gated delta, issue #6): launch configs of the forward's state
pass writing o itself (``chunk_fwd.FUSE_O``, config ``fwd_h_o``), and that pass on the few-chain row H16-1seq,
whose default state pass runs V blocks of 16 unfused (``FUSE_MIN_BV``):

- ``o_8w1``: ``fwd_h_o`` at 8 warps, one stage (default 4 warps, one stage);
- ``o_1seq_bv64``: ``fwd_h`` forced to V blocks of 64 (so 32 programs on H16-1seq) with v_new and o fused; the
  override also moves the backward's recompute to 64: read the forward only;
- ``o_1seq_bv32w8``: V blocks of 32 at 8 warps fused (``FUSE_MIN_BV`` 32); the fused pass at 32 / 4 warps gave
  NaN o in session 22 (Triton 3.6 miscompile): run it in its own process, it may fault.
"""

import importlib


def _cfg(overrides, min_bv=None):
    saved = []

    def enter():
        common = importlib.import_module("jagattn.gated_delta.triton.common")
        cf = importlib.import_module("jagattn.gated_delta.triton.chunk_fwd")
        saved[:] = [dict(common.CONFIG_OVERRIDE), cf.FUSE_MIN_BV]
        common.CONFIG_OVERRIDE.update(common.parse_config_override(overrides))
        if min_bv is not None:
            cf.FUSE_MIN_BV = min_bv

    def leave():
        common = importlib.import_module("jagattn.gated_delta.triton.common")
        common.CONFIG_OVERRIDE.clear()
        common.CONFIG_OVERRIDE.update(saved[0])
        importlib.import_module("jagattn.gated_delta.triton.chunk_fwd").FUSE_MIN_BV = saved[1]

    return (enter, leave)


VARIANTS = {
    "o_8w1": [_cfg("fwd_h_o=64,8,1")],
    "o_1seq_bv64": [_cfg("fwd_h=64,4,2")],
    "o_1seq_bv32w8": [_cfg("fwd_h=32,8,2;fwd_h_o=32,8,1", min_bv=32)],
}


def _max_mean(value):
    saved = []

    def enter():
        cf = importlib.import_module("jagattn.gated_delta.triton.chunk_fwd")
        saved[:] = [cf.FUSE_O_MAX_MEAN]
        cf.FUSE_O_MAX_MEAN = value

    def leave():
        importlib.import_module("jagattn.gated_delta.triton.chunk_fwd").FUSE_O_MAX_MEAN = saved[0]

    return (enter, leave)


# round 9: which sequences the fused-output pass takes (FUSE_O_MAX_MEAN x the mean length; default 1.0)
VARIANTS.update(
    {"maxmean_1.5": [_max_mean(1.5)], "maxmean_1.25": [_max_mean(1.25)], "maxmean_0": [_max_mean(0.0)]}
)
