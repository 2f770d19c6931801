"""Session 27 rounds 10-11 (issues #4, #5), for ``benchmarks/src_variant_ab.py``: what zeroing the next sequence's rows
of a partial q / dO block costs the Gluon dK/dV kernels (round 12: the attention kernel zeroes the next step's block
under the current step's products) (``_core.gluon.zero_rows_from``). ``no_zero`` compiles the
branch out (the kernels as in session 26); ``whole_tile`` zeroes the 64-row tile in one load / store instead of 16-row
slices; ``no_skip`` also rewrites the slices below the first row to zero. ``hstu_gluon*`` (round 10) ran the HSTU rows
with the opt-in Gluon kernel."""

import os
import sys

from jagattn.hstu.triton import bwd_gluon as hstu_gluon

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from s26_variants import module_setter  # noqa: E402

ATTN = ("jagattn.attention.triton.bwd_gluon", "_attention_bwd_dkdv_gluon_kernel")
HSTU = ("jagattn.hstu.triton.bwd_gluon", "_hstu_bwd_dkdv_gluon_kernel")
ZERO = ("jagattn._core.gluon", "_zero_rows_of")  # round 11 ran them on zero_rows_from, before its body moved

VARIANTS = {
    # round 11 (zeroing at the top of the step): "no_zero": [(*ATTN, "if m0 + BLOCK_M > lq:", "if False:")]
    "no_zero": [
        (*ATTN, "if (total > 0) & (m_start + BLOCK_M > lq):", "if False:"),
        (*ATTN, "if (j1 < total) & (m1 + BLOCK_M > lq):", "if False:"),
    ],
    "whole_tile": [
        (*ZERO, "gl.static_range(0, ROWS, 16)", "gl.static_range(0, ROWS, ROWS)"),
        (*ZERO, "if r + 16 > first:", "if r + ROWS > first:"),
        (*ZERO, "tile.slice(r, 16)", "tile.slice(r, ROWS)"),
        (*ZERO, "gl.arange(0, 16, layout", "gl.arange(0, ROWS, layout"),
    ],
    "no_skip": [(*ZERO, "if r + 16 > first:", "if True:")],
    "hstu_gluon": module_setter(hstu_gluon, GLUON_SWITCH="1"),
    "hstu_gluon_no_zero": [
        *module_setter(hstu_gluon, GLUON_SWITCH="1"),
        (*HSTU, "if start_m + BLOCK_M > n:", "if False:"),
    ],
}
