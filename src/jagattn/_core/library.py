"""Helpers over ``torch.library`` shared by the families' ``ops.py``.

Every kernel path is a registered op in the ``jagattn`` namespace (``torch.library.triton_op``
with ``wrap_triton`` for Triton kernels, so Inductor sees through them), with a fake impl and
``register_autograd``. Fixed arity: a separate op per output signature rather than Optional outputs.
"""

from __future__ import annotations

import torch

NAMESPACE = "jagattn"


def qualname(name: str) -> str:
    """``jagattn::<name>``"""
    return f"{NAMESPACE}::{name}"


def op(name: str):
    """The registered ``torch.ops.jagattn.<name>`` overload packet."""
    return getattr(getattr(torch.ops, NAMESPACE), name)


def is_tracing() -> bool:
    """True under torch.compile / export tracing (where eager-only shortcuts must not run)."""
    return torch.compiler.is_compiling()
