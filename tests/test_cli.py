"""The command line: info, explain, demo (the README's main job) and bench dispatch."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from jagattn.__main__ import main


def test_info_lists_every_backend(capsys):
    assert main(["info"]) == 0
    out = capsys.readouterr().out
    assert "torch" in out and "triton" in out
    for fam in ("attention", "hstu", "gated_delta"):
        assert fam in out
    assert "reference" in out


@pytest.mark.parametrize(
    "argv",
    [
        [
            "explain",
            "attention",
            "--dtype",
            "fp32",
            "--batch",
            "2",
            "--seqlen",
            "8",
            "--causal",
            "--kv-heads",
            "4",
        ],
        [
            "explain",
            "attention",
            "--dtype",
            "fp16",
            "--dim",
            "300",
            "--batch",
            "1",
            "--seqlen",
            "4",
            "--backward",
        ],
    ],
)
def test_explain_prints_the_table(argv, capsys):
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "family 'attention'" in out and "CHOSEN" in out


def test_explain_bad_shape_is_a_clear_error(capsys):
    # the validation's message on stderr and exit status 2, not a traceback
    assert (
        main(["explain", "attention", "--kv-heads", "5", "--batch", "1", "--seqlen", "4", "--dtype", "fp32"])
        == 2
    )
    err = capsys.readouterr().err
    assert err.startswith("jagattn explain: error:") and "Hq=16 must be a multiple of Hkv=5" in err
    assert main(["explain", "hstu", "--backend", "nosuch", "--device", "cpu", "--seqlen", "4"]) == 2
    assert "family 'hstu' has no backend 'nosuch'" in capsys.readouterr().err
    assert main(["explain", "hstu", "--cached", "-1", "--device", "cpu"]) == 2
    assert "--cached: DELTA must be >= 0" in capsys.readouterr().err
    assert main(["explain", "attention", "--cached", "2", "--device", "cpu"]) == 2
    assert "only the hstu family has a cached op" in capsys.readouterr().err


def test_explain_cached_hstu(capsys):
    # --cached DELTA explains hstu_attention_cached (delta query rows per sequence); with gradients the Triton
    # backend says why not (forward only)
    argv = [
        "explain",
        "hstu",
        "--cached",
        "2",
        "--device",
        "cpu",
        "--dtype",
        "fp16",
        "--batch",
        "3",
        "--seqlen",
        "8",
    ]
    interp = os.environ.get("TRITON_INTERPRET") == "1"  # CPU tensors reach the Triton backend's own reasons
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "family 'hstu'" in out and "CHOSEN" in out
    if interp:
        assert "triton     CHOSEN" in out, out
    assert main([*argv, "--backward"]) == 0
    out = capsys.readouterr().out
    if interp:
        assert "forward only" in out and "reference  CHOSEN" in out, out


def test_demo_runs_and_checks(capsys, monkeypatch):
    # In-process: conftest already set TRITON_INTERPRET when there is no GPU.
    from jagattn import demo

    # CI time: on the CPU the demo's fwd+bwd timing (one rep) repeats, call for call, the forward and backward
    # it has just checked (the same case, arguments, backend and output-gradient seed); that repeat gets the
    # checked call's results instead of a second interpreter run. Every other call (the references, the
    # forward-only timing without gradients) runs as in `make demo`; on a GPU everything does.
    real = demo._forward_backward
    done = []  # (case, args, cot_seed, result): the objects are kept, so identity cannot be reused

    def forward_backward(case, args, backend, cot_seed):
        if backend == "auto":
            for c, a, s, res in done:
                if c is case and a is args and s == cot_seed:
                    return res
        res = real(case, args, backend, cot_seed)
        if backend == "auto":
            done.append((case, args, cot_seed, res))
        return res

    on_cpu = not torch.cuda.is_available()  # run_demo's device
    if on_cpu:
        monkeypatch.setattr(demo, "_forward_backward", forward_backward)
    assert demo.run_demo(seed=1) == 0
    assert not on_cpu or len(done) == len(demo.cases())  # each case's fwd+bwd through "auto" ran (once)
    out = capsys.readouterr().out
    assert "summary" in out and "FAIL" not in out
    for op in ("attention", "hstu_attention_cached", "gated_delta_rule"):
        assert op in out


def test_module_entry_point_runs():
    env = dict(os.environ)
    r = subprocess.run(
        [sys.executable, "-m", "jagattn", "info"], capture_output=True, text=True, env=env, timeout=300
    )
    assert r.returncode == 0, r.stderr
    assert "jagattn" in r.stdout


def test_base_dependencies_let_triton_import_on_cpu():
    """``make demo`` installs only the base dependencies; Triton's CPU interpreter imports numpy, and
    without it every op fell back to the reference (a fresh clone in session 11). Keep it a base
    dependency, with ranges that torch==2.13.0 (the Makefile's pin) satisfies."""
    tomllib = pytest.importorskip("tomllib")
    root = Path(__file__).resolve().parents[1]
    deps = tomllib.loads((root / "pyproject.toml").read_text())["project"]["dependencies"]
    names = {d.split(">")[0].split("=")[0].split("<")[0].strip() for d in deps}
    assert {"torch", "triton", "numpy"} <= names
