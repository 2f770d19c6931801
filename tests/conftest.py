"""Test setup. On a machine without CUDA, Triton kernels run under the interpreter, which must be
switched on before triton is imported; every kernel output is poisoned with NaN before it is
written so an unwritten element fails the comparison; the fp32 route of tiny batches is off unless a
test turns it on."""

import importlib.util
import os
import sys
from pathlib import Path

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")
os.environ.setdefault("JAGATTN_POISON", "1")
# The suite's small fp16 batches test the half-precision kernels themselves: by default tiny batches run
# on fp32 copies instead (_core/precision.py), which tests/test_fp32_route.py covers with the route on.
os.environ.setdefault("JAGATTN_SMALL_FP32", "off")

import pytest  # noqa: E402


def pytest_collection_modifyitems(config, items):
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU (run on the device machine)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def device():
    return "cuda" if torch.cuda.is_available() else "cpu"


@pytest.fixture
def on_launch(monkeypatch):
    """``on_launch(hook)`` replaces ``torch.library.wrap_triton`` so that ``hook(kernel, args, kwargs)``
    sees every Triton launch of the package (which all go through ``wrap_triton(kernel)[grid](...)``)
    before it runs; undone at the end of the test."""

    def install(hook):
        real = torch.library.wrap_triton

        def wrap(kernel):
            wrapped = real(kernel)

            class _Grid:
                def __getitem__(self, grid):
                    launch = wrapped[grid]

                    def run(*args, **kwargs):
                        hook(kernel, args, kwargs)
                        return launch(*args, **kwargs)

                    return run

            return _Grid()

        monkeypatch.setattr(torch.library, "wrap_triton", wrap)

    return install


FUZZ_SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "fuzz_spec_rule.py"


def load_fuzz_script():
    """A fresh module object of ``benchmarks/fuzz_spec_rule.py`` (the random SPEC-rule fuzz): each test
    module gets its own, so one module's settings (e.g. ``ROUNDED_GRADS``) never leak into another's."""
    spec = importlib.util.spec_from_file_location("fuzz_spec_rule", FUZZ_SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["fuzz_spec_rule"] = mod  # as an import would register it
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def fuzz():
    """The fuzz script, loaded once per test module (``load_fuzz_script``)."""
    return load_fuzz_script()
