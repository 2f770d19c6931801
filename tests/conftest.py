"""Test setup. On a machine without CUDA, Triton kernels run under the interpreter, which must be
switched on before triton is imported; every kernel output is poisoned with NaN before it is
written so an unwritten element fails the comparison."""

import os

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")
os.environ.setdefault("JAGATTN_POISON", "1")

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
