"""Opt-in environment switches fail loudly: a value that is set but not understood raises a
ValueError naming the variable, the allowed values and the value; unset (or empty) gives the
documented default and every valid value keeps its meaning.

Per-call switches are tested through the function that reads them. Import-time ones are read into
module attributes once; their reading statements are re-run here from the module's own source
(``_import_read``) in a copy of the module's namespace, so no module is reloaded and no op is
registered twice. The hstu launcher modules are not imported at all (their statements and
functions run from the source file): they bind ``torch.library.wrap_triton`` at import, and
tests/test_launch_args.py only sees their launches when it is the first to import them."""

from __future__ import annotations

import ast
import os
import warnings
from pathlib import Path

import pytest
import torch

import jagattn
from jagattn._core import alloc, triton_utils, varlen
from jagattn._core.env import env_choice, env_flag, env_positive_int, env_raw
from jagattn.attention.triton import bwd as attn_bwd
from jagattn.gated_delta import ops as gd_ops
from jagattn.gated_delta.triton import chunk_fwd, common

VAR = "JAGATTN_TEST_SWITCH"
PKG = Path(jagattn.__file__).parent


def _mentions(node: ast.AST, var: str) -> bool:
    return any(
        isinstance(n, ast.Constant) and isinstance(n.value, str) and var in n.value for n in ast.walk(node)
    )


def _run_source(path: Path, keep, namespace: dict) -> dict:
    """Run the top-level statements of the file ``path`` that ``keep`` selects in ``namespace``."""
    stmts = [s for s in ast.parse(path.read_text()).body if keep(s)]
    assert stmts, f"nothing selected in {path}"
    exec(compile(ast.Module(body=stmts, type_ignores=[]), str(path), "exec"), namespace)
    return namespace


def _import_read(module, var: str, **namespace) -> dict:
    """Re-run the top-level statements of ``module`` that read ``var`` (definitions and docstrings
    excluded) in a copy of its namespace updated with ``namespace``; the resulting namespace. A
    string names a file under the package that is not imported: only ``os`` and the env helpers
    are defined for its statements."""
    if isinstance(module, str):
        path, base = PKG / module, {"os": os, "env_choice": env_choice, "env_flag": env_flag}
    else:
        path, base = Path(module.__file__), vars(module)

    def reads(s: ast.stmt) -> bool:
        if isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant):
            return False
        return isinstance(s, (ast.Assign, ast.AnnAssign, ast.If, ast.Expr)) and _mentions(s, var)

    return _run_source(path, reads, {**base, **namespace})


def _hstu_gate_fns():
    """``fast_sigmoid`` and ``packed_silu`` of hstu/triton/fwd.py, defined from its source as on a
    GPU (``interpreter_enabled`` is False; nothing is launched)."""
    names = ("fast_sigmoid", "packed_silu")
    ns = {"torch": torch, "os": os, "env_flag": env_flag, "interpreter_enabled": lambda: False}
    ns = _run_source(
        PKG / "hstu/triton/fwd.py", lambda s: isinstance(s, ast.FunctionDef) and s.name in names, ns
    )
    return (ns[n] for n in names)


# --- the helpers ------------------------------------------------------------------------------


def test_env_choice(monkeypatch):
    monkeypatch.delenv(VAR, raising=False)
    assert env_choice(VAR, ("kernel", "atomic"), "kernel") == "kernel"
    assert env_choice(VAR, ("a", "b"), None) is None
    for unset in ("", "  "):
        monkeypatch.setenv(VAR, unset)
        assert env_choice(VAR, ("kernel", "atomic"), "kernel") == "kernel"
    for value, want in (("atomic", "atomic"), (" Atomic ", "atomic"), ("KERNEL", "kernel")):
        monkeypatch.setenv(VAR, value)
        assert env_choice(VAR, ("kernel", "atomic"), "kernel") == want
    monkeypatch.setenv(VAR, "atomc")
    with pytest.raises(ValueError, match=rf"^{VAR} must be one of kernel, atomic \(got 'atomc'\)$"):
        env_choice(VAR, ("kernel", "atomic"), "kernel")
    monkeypatch.setenv(VAR, "x")  # an empty choice (meaning "unset") is not listed
    with pytest.raises(ValueError, match=rf"^{VAR} must be one of fp32, input \(got 'x'\)$"):
        env_choice(VAR, ("", "fp32", "input"), "")


def test_reads_follow_every_change(monkeypatch):
    # parsed values are cached under the raw string (_core/env.py): every read still sees the current
    # value, through os.environ or its store, and a refused value raises on every read
    monkeypatch.delenv(VAR, raising=False)
    assert env_raw(VAR) == "" and env_flag(VAR, None) is None
    for value, want in (("1", True), ("0", False), ("1", True), (" 0 ", False)):
        monkeypatch.setenv(VAR, value)
        assert env_raw(VAR) == value and env_flag(VAR, None) is want
        assert env_choice(VAR, ("0", "1"), None) == value.strip()
    for _ in range(2):
        monkeypatch.setenv(VAR, "on")
        with pytest.raises(ValueError, match=rf"^{VAR} must be one of 0, 1 \(got 'on'\)$"):
            env_flag(VAR, False)
    monkeypatch.setenv(VAR, "3")
    assert env_positive_int(VAR, None) == 3
    monkeypatch.setenv(VAR, "0")
    with pytest.raises(ValueError, match=rf"^{VAR} must be a positive integer \(got '0'\)$"):
        env_positive_int(VAR, None)
    assert env_flag(VAR, None) is False  # the same raw value under another kind of switch
    monkeypatch.delenv(VAR)
    assert env_raw(VAR) == "" and env_positive_int(VAR, 5) == 5
    with monkeypatch.context() as m:  # os.environ rebound to another mapping: read from that one
        m.setattr(os, "environ", {VAR: "1"})
        assert env_raw(VAR) == "1" and env_flag(VAR, None) is True


def test_env_flag(monkeypatch):
    monkeypatch.delenv(VAR, raising=False)
    assert env_flag(VAR, False) is False
    assert env_flag(VAR, True) is True
    assert env_flag(VAR, None) is None
    for value, want in (("0", False), ("1", True), (" 1\n", True), ("", True)):
        monkeypatch.setenv(VAR, value)
        assert env_flag(VAR, True) is want
    # words are refused: before validation "false"/"off" turned some switches on (!= "0")
    for bad in ("yes", "true", "false", "off", "2", "01", "-1"):
        monkeypatch.setenv(VAR, bad)
        with pytest.raises(ValueError, match=rf"^{VAR} must be one of 0, 1 \(got '{bad}'\)$"):
            env_flag(VAR, False)


def test_env_positive_int(monkeypatch):
    monkeypatch.delenv(VAR, raising=False)
    assert env_positive_int(VAR, None) is None
    monkeypatch.setenv(VAR, " 12 ")
    assert env_positive_int(VAR, None) == 12
    for bad in ("0", "-3", "abc", "1.5", "²"):
        monkeypatch.setenv(VAR, bad)
        with pytest.raises(ValueError, match=rf"^{VAR} must be a positive integer \(got '{bad}'\)$"):
            env_positive_int(VAR, None)


# --- per-call switches, through the functions that read them ----------------------------------


def test_attn_dq_mode(monkeypatch):
    var = "JAGATTN_ATTN_DQ"
    monkeypatch.delenv(var, raising=False)
    assert attn_bwd.dq_mode(False) == "kernel"
    for value, want in (("atomic", "atomic"), ("kernel", "kernel"), (" ATOMIC ", "atomic")):
        monkeypatch.setenv(var, value)
        assert attn_bwd.dq_mode(False) == want
        assert attn_bwd.dq_mode(True) == "kernel"
    monkeypatch.setenv(var, "atomc")
    with pytest.raises(ValueError, match=r"JAGATTN_ATTN_DQ must be one of kernel, atomic \(got 'atomc'\)"):
        attn_bwd.dq_mode(False)


def test_attn_dq_heads(monkeypatch):
    var = "JAGATTN_ATTN_DQ_HEADS"
    monkeypatch.delenv(var, raising=False)
    # 16 query heads, 4 kv heads (group 4), bf16: the fp32 buffer may hold 4 query heads = 1 kv head
    assert attn_bwd.dq_chunk_kv_heads(16, 4, 2) == 1
    assert attn_bwd.dq_chunk_kv_heads(16, 4, 4) == 2
    monkeypatch.setenv(var, "8")
    assert attn_bwd.dq_chunk_kv_heads(16, 4, 2) == 2
    monkeypatch.setenv(var, "64")
    assert attn_bwd.dq_chunk_kv_heads(16, 4, 2) == 4
    for bad in ("0", "eight", "-8"):
        monkeypatch.setenv(var, bad)
        with pytest.raises(
            ValueError, match=rf"JAGATTN_ATTN_DQ_HEADS must be a positive integer \(got '{bad}'\)"
        ):
            attn_bwd.dq_chunk_kv_heads(16, 4, 2)


def test_attn_head_major(monkeypatch):
    var = "JAGATTN_ATTN_HEAD_MAJOR"
    monkeypatch.delenv(var, raising=False)
    assert attn_bwd.dkdv_schedule(32768, 16, 4, -1) == (0, True)  # GQA, mean 2048: head-major
    assert attn_bwd.dkdv_schedule(32768, 16, 1, -1) == (0, False)
    monkeypatch.setenv(var, "0")
    assert attn_bwd.dkdv_schedule(32768, 16, 4, -1) == (0, False)
    monkeypatch.setenv(var, "1")
    assert attn_bwd.dkdv_schedule(32768, 16, 1, -1) == (0, True)
    monkeypatch.setenv(var, "yes")
    with pytest.raises(ValueError, match=r"JAGATTN_ATTN_HEAD_MAJOR must be one of 0, 1 \(got 'yes'\)"):
        attn_bwd.dkdv_schedule(32768, 16, 4, -1)


@pytest.mark.parametrize("var", ["JAGATTN_HSTU_FAST_SIGMOID", "JAGATTN_HSTU_PACKED"])
def test_hstu_fast_sigmoid_and_packed(monkeypatch, var):
    fast_sigmoid, packed_silu = _hstu_gate_fns()  # both read the variables for bf16 on a GPU only
    for v in ("JAGATTN_HSTU_FAST_SIGMOID", "JAGATTN_HSTU_PACKED"):
        monkeypatch.delenv(v, raising=False)
    assert fast_sigmoid(torch.bfloat16) and packed_silu(torch.bfloat16)
    assert not packed_silu(torch.float16)
    monkeypatch.setenv(var, "1")
    assert packed_silu(torch.bfloat16)
    monkeypatch.setenv(var, "0")
    assert not packed_silu(torch.bfloat16)
    assert fast_sigmoid(torch.bfloat16) == (var == "JAGATTN_HSTU_PACKED")
    monkeypatch.setenv(var, "off")
    with pytest.raises(ValueError, match=rf"{var} must be one of 0, 1 \(got 'off'\)"):
        packed_silu(torch.bfloat16)


def test_poison(monkeypatch):
    var = "JAGATTN_POISON"
    monkeypatch.delenv(var, raising=False)
    assert alloc.poison_enabled() is False
    monkeypatch.setenv(var, "1")
    assert alloc.poison_enabled() is True
    monkeypatch.setenv(var, "0")
    assert alloc.poison_enabled() is False
    monkeypatch.setenv(var, "nan")
    with pytest.raises(ValueError, match=r"JAGATTN_POISON must be one of 0, 1 \(got 'nan'\)"):
        alloc.new_empty((2,), dtype=torch.float32, device="cpu")


def test_check_inputs(monkeypatch):
    var = "JAGATTN_CHECK_INPUTS"
    # read for GPU tensors only: a meta tensor stands in for one (and is not counted as tracing)
    monkeypatch.setattr(varlen, "_is_tracing", lambda t: False)
    meta = torch.zeros(3, dtype=torch.int32, device="meta")
    monkeypatch.delenv(var, raising=False)
    assert varlen.value_checks_enabled(meta) is False
    monkeypatch.setenv(var, "1")
    assert varlen.value_checks_enabled(meta) is True
    monkeypatch.setenv(var, "true")
    with pytest.raises(ValueError, match=r"JAGATTN_CHECK_INPUTS must be one of 0, 1 \(got 'true'\)"):
        varlen.value_checks_enabled(meta)


def test_autotune(monkeypatch):
    fam, glob = "JAGATTN_FAMX_AUTOTUNE", "JAGATTN_AUTOTUNE"
    monkeypatch.delenv(fam, raising=False)
    monkeypatch.delenv(glob, raising=False)
    assert triton_utils.autotune_enabled("famx") is True
    assert triton_utils.autotune_enabled("famx", default=False) is False
    monkeypatch.setenv(glob, "0")
    assert triton_utils.autotune_enabled("famx") is False
    monkeypatch.setenv(fam, "1")  # the family's variable wins
    assert triton_utils.autotune_enabled("famx") is True
    monkeypatch.setenv(glob, "no")  # ... but a bad global value is still refused
    with pytest.raises(ValueError, match=r"JAGATTN_AUTOTUNE must be one of 0, 1 \(got 'no'\)"):
        triton_utils.autotune_enabled("famx")
    monkeypatch.delenv(glob)
    monkeypatch.setenv(fam, "false")
    with pytest.raises(ValueError, match=r"JAGATTN_FAMX_AUTOTUNE must be one of 0, 1 \(got 'false'\)"):
        triton_utils.autotune_enabled("famx")


# --- import-time switches: the module's own reading statements --------------------------------

IMPORT_TIME = [
    # module, variable, attribute, default, a valid value and its reading, a bad value, allowed values
    ("hstu/ops.py", "JAGATTN_HSTU_ATOMIC_DQ", "ATOMIC_DQ_DEFAULT", False, ("1", True), "yes", "0, 1"),
    ("hstu/triton/schedule.py", "JAGATTN_HSTU_COMPACT", "ENABLED", False, ("1", True), "on", "0, 1"),
    ("_core/library.py", "JAGATTN_EAGER_FAST", "EAGER_FAST", True, ("0", False), "off", "0, 1"),
    (
        "_core/precision.py",
        "JAGATTN_SMALL_FP32",
        "SMALL_FP32",
        "auto",
        ("OFF", "off"),
        "fp32",
        "auto, on, off",
    ),
    (
        "attention/triton/fwd.py",
        "JAGATTN_ATTN_FWD_TILE",
        "FWD_TILE_OVERRIDE",
        None,
        ("wide", "wide"),
        "medium",
        "short, long, wide",
    ),
    (
        "attention/triton/fwd.py",
        "JAGATTN_ATTN_FWD_HEAD_FAST",
        "FWD_HEAD_FAST_OVERRIDE",
        None,
        ("1", "1"),
        "yes",
        "0, 1",
    ),
    ("attention/triton/fwd.py", "JAGATTN_ATTN_FWD_TMA", "FWD_TMA", "auto", ("0", "0"), "off", "auto, 0"),
    ("attention/triton/bwd.py", "JAGATTN_ATTN_DQ_TMA", "DQ_TMA", "auto", ("0", "0"), "off", "auto, 0"),
    ("attention/triton/bwd.py", "JAGATTN_ATTN_DKDV_TMA", "DKDV_TMA", "auto", ("0", "0"), "off", "auto, 0"),
    (
        "attention/triton/bwd_gluon.py",
        "JAGATTN_ATTN_GLUON",
        "GLUON_SWITCH",
        "auto",
        ("0", "0"),
        "off",
        "auto, 0",
    ),
    (
        "hstu/triton/bwd_gluon.py",
        "JAGATTN_HSTU_GLUON",
        "GLUON_SWITCH",
        "auto",
        ("0", "0"),
        "on",
        "auto, 0, 1",
    ),
    ("hstu/triton/bwd_gluon.py", "JAGATTN_HSTU_GLUON_DQ", "DQ_SWITCH", "auto", ("0", "0"), "off", "auto, 0"),
    (chunk_fwd, "JAGATTN_GD_KKT", "KKT_VARIANT", "blocks16", ("dot64", "dot64"), "dot32", "blocks16, dot64"),
    (chunk_fwd, "JAGATTN_GD_WU", "WU_VARIANT", "loop", ("tiles", "tiles"), "tile", "loop, tiles"),
    (chunk_fwd, "JAGATTN_GD_WU_LOWP", "WU_LOWP", "w", ("OFF", "off"), "uw", "off, u, w, wu"),
    (gd_ops, "JAGATTN_GD_SAVE_T", "SAVE_T", "auto", ("input", "input"), "fp16", "auto, off, fp32, input"),
    (gd_ops, "JAGATTN_GD_NORM_ON_LOAD", "NORM_ON_LOAD", "off", ("Auto", "auto"), "on", "off, auto, all"),
    (gd_ops, "JAGATTN_GD_KEEP_QK", "KEEP_QK", "auto", ("OFF", "off"), "on", "auto, off"),
    (
        "gated_delta/triton/chunk_bwd.py",
        "JAGATTN_GD_DH_SPLIT",
        "DH_SPLIT",
        "off",
        ("all", "all"),
        "on",
        "auto, off, all",
    ),
    (
        "gated_delta/triton/common.py",
        "JAGATTN_GD_STATE_PREFETCH",
        "STATE_PREFETCH",
        "auto",
        ("1", "1"),
        "yes",
        "auto, 0, 1",
    ),
    (
        "gated_delta/triton/chunk_bwd.py",
        "JAGATTN_GD_FUSE_DV",
        "FUSE_DV",
        "auto",
        ("1", "1"),
        "yes",
        "auto, 0, 1",
    ),
    (
        "gated_delta/backends.py",
        "JAGATTN_GD_FP32_TRAIN",
        "FP32_TRAIN",
        "recurrent",
        ("Reference", "reference"),
        "token",
        "reference, recurrent",
    ),
    (
        "gated_delta/triton/common.py",
        "JAGATTN_GD_BF16_DOT",
        "BF16_DOT",
        "tf32",
        ("tf32x3", "tf32x3"),
        "fp32",
        "tf32, tf32x3, ieee",
    ),
]


@pytest.mark.parametrize(
    "module, var, attr, default, valid, bad, allowed", IMPORT_TIME, ids=[t[1] for t in IMPORT_TIME]
)
def test_import_time_switch(monkeypatch, module, var, attr, default, valid, bad, allowed):
    monkeypatch.delenv(var, raising=False)
    got = _import_read(module, var)[attr]
    assert got == default and type(got) is type(default)
    monkeypatch.setenv(var, valid[0])
    assert _import_read(module, var)[attr] == valid[1]
    monkeypatch.setenv(var, bad)
    want = (
        rf"{var} must be one of {allowed} \(got '{bad}'\)" if allowed else rf"{var} must be one of .*'{bad}'"
    )
    with pytest.raises(ValueError, match=want):
        _import_read(module, var)


def test_gd_config(monkeypatch):
    var = "JAGATTN_GD_CONFIG"
    monkeypatch.delenv(var, raising=False)
    assert _import_read(common, var, CONFIG_OVERRIDE={})["CONFIG_OVERRIDE"] == {}
    monkeypatch.setenv(var, " bwd_dqkwg=64, 8,3,64 ; fwd_h=32,4,2;")
    want = {"bwd_dqkwg": (64, 8, 3, 64), "fwd_h": (32, 4, 2)}
    assert _import_read(common, var, CONFIG_OVERRIDE={})["CONFIG_OVERRIDE"] == want
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # candidates are taken silently
        assert common.parse_config_override("bwd_dqkwg=32,4,1,32;bwd_wy=16,8,1") == {
            "bwd_dqkwg": (32, 4, 1, 32),
            "bwd_wy": (16, 8, 1),
        }
    # a config outside the candidates is taken, with a warning naming it and the candidates
    with pytest.warns(
        UserWarning, match=r"^JAGATTN_GD_CONFIG: bwd_wy=32,4,32 is not one of bwd_wy's candidate .*64,4,2"
    ):
        assert common.parse_config_override("bwd_wy=32,4,32") == {"bwd_wy": (32, 4, 32)}
    with pytest.warns(UserWarning, match=r"bwd_dqkwg=16, 4,1,16 is not one of .*miscompile"):
        assert common.parse_config_override("bwd_dqkwg=16, 4,1,16") == {"bwd_dqkwg": (16, 4, 1, 16)}
    assert common.parse_config_override(" ; ") == {}
    for bad, msg in (
        (
            "fwd_h:32,4,2",
            r"items must be kernel=a,b,\.\.\. with kernel one of fwd_h, .*bwd_wy \(got 'fwd_h:32,4,2'\)",
        ),
        ("fwd_hh=32,4,2", r"kernel one of .* \(got 'fwd_hh=32,4,2'\)"),
        ("=32,4,2", r"kernel one of .* \(got '=32,4,2'\)"),
        ("fwd_h=32,four,2", r"fwd_h takes 3 integers \(got 'fwd_h=32,four,2'\)"),
        ("fwd_h=32,4,2,", r"fwd_h takes 3 integers"),
        ("fwd_h=32,4", r"fwd_h takes 3 integers"),
        ("bwd_wy=32,4", r"bwd_wy takes 3 integers"),
        ("bwd_dqkwg=32,8,3", r"bwd_dqkwg takes 4 integers"),
    ):
        with pytest.raises(ValueError, match=rf"^JAGATTN_GD_CONFIG.*{msg}"):
            common.parse_config_override(bad)
    monkeypatch.setenv(var, "fwd_h=32,4,2;bwd_wy")
    with pytest.raises(ValueError, match=r"JAGATTN_GD_CONFIG items must be .*\(got 'bwd_wy'\)"):
        _import_read(common, var, CONFIG_OVERRIDE={})
