"""The Hopper Gluon kernels (``attention/triton/bwd_gluon.py``, ``hstu/triton/bwd_gluon.py``, shared pieces in
``_core/gluon.py``) still build for sm_90 with the installed Triton, without a GPU. CI runs a newer Triton than the
device, and Gluon's API moves between releases (3.9 renamed the TMA load and the CTA barrier): this is where such a
change shows up. Their behaviour is tested on the GPU (``test_gpu_gluon*`` in the family test files) and their guards
on the CPU (``test_gluon_only_where_it_applies``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

COMPILE_ALL = """
import sys, torch
from jagattn._core import gluon
if not gluon.GLUON:
    print("no-gluon")
    sys.exit(0)
from jagattn.attention.triton import bwd_gluon as attn
from jagattn.hstu.triton import bwd_gluon as hstu
for d, dv, dtype, left, right, head_major in ((128, 128, torch.bfloat16, False, True, False),
                                              (64, 128, torch.float16, True, True, True)):
    assert "wgmma" in attn.compile_sm90(d, dv, dtype, left, right, head_major).asm["ptx"]
    assert "wgmma" in attn.compile_dq_sm90(d, dv, dtype, left, right, head_major).asm["ptx"]  # has_dlse on / off
for dq, dv, dtype, ctx, targets, window, full in ((128, 128, torch.bfloat16, False, True, False, False),
                                                  (64, 128, torch.float16, True, False, True, False),
                                                  (128, 64, torch.bfloat16, True, True, True, True)):
    for clip in (0, 1, 2):  # rows past a sequence's end zeroed in shared memory / by TMA always / where a box clips
        for build in (hstu.compile_sm90, hstu.compile_dq_sm90):
            ptx = build(dq, dv, dtype, ctx, targets, window, full, clip).asm["ptx"]
            assert "wgmma" in ptx and ("cp.async.bulk.tensor.3d" in ptx) == (clip > 0), (build, clip)
            assert "cp.async.bulk.tensor.2d" in ptx  # dK/dV's K / V, dQ's q / dO, and the full boxes of clip 2
    if ctx and window:  # the contextual rows' dQ sum added by the first query block (hstu/triton/bwd.py ctx_split)
        assert "wgmma" in hstu.compile_dq_sm90(dq, dv, dtype, ctx, targets, window, full, 0, ctx_ks=128).asm["ptx"]
print("compiled")
"""


def test_gluon_kernels_compile_for_sm90():
    env = {
        k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"
    }  # compiles for sm_90, not interprets
    env["PYTHONPATH"] = (
        str(Path(__file__).resolve().parents[1] / "src") + os.pathsep + env.get("PYTHONPATH", "")
    )
    res = subprocess.run(
        [sys.executable, "-c", COMPILE_ALL], capture_output=True, text=True, env=env, timeout=600
    )
    assert res.returncode == 0, res.stderr[-3000:]
    if "no-gluon" in res.stdout:
        pytest.skip("this Triton has no Gluon Hopper API: the Triton kernels run everywhere")
    assert "compiled" in res.stdout
