"""``benchmarks/compile_check.py`` (sm_90 registers/spills of every kernel a public call launches, on a
machine without a GPU) keeps recording the launches of each family: its patches of the device checks
and of Triton's launch entry points must track the code. ``--record-only`` compiles nothing (fast)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "compile_check.py"
# the kernels each family's bf16 forward + backward launches at least once
EXPECTED = {
    "attention": ["_attention_fwd_kernel", "_attention_bwd_dq_kernel", "_attention_bwd_dkdv_kernel"],
    "hstu": ["_hstu_fwd_kernel", "_hstu_bwd_kernel"],
    "gated_delta": ["_gated_delta_fwd_h_kernel", "_gated_delta_bwd_dhu_kernel", "_gated_delta_bwd_wy_kernel"],
}


@pytest.mark.parametrize("family", list(EXPECTED))
def test_records_every_launch(family):
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = str(SCRIPT.parents[1] / "src") + os.pathsep + env.get("PYTHONPATH", "")
    args = ["--family", family, "--len", "64", "--batch", "2", "--heads", "2", "--d", "32", "--dv", "32"]
    res = subprocess.run(
        [sys.executable, str(SCRIPT), *args, "--record-only"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr[-2000:]
    launched = [
        line.split(":")[1].split(",")[0].strip()
        for line in res.stdout.splitlines()
        if line.startswith("launch")
    ]
    for name in EXPECTED[family]:
        assert name in launched, (name, res.stdout)


def test_refuses_the_interpreter():
    env = dict(os.environ, TRITON_INTERPRET="1")
    res = subprocess.run(
        [sys.executable, str(SCRIPT), "--family", "hstu"], capture_output=True, text=True, env=env
    )
    assert res.returncode != 0 and "without TRITON_INTERPRET" in res.stderr
