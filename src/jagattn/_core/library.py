"""Helpers over ``torch.library`` shared by the families' ``ops.py``.

Every kernel path is a registered op in the ``jagattn`` namespace (``torch.library.triton_op``
with ``wrap_triton`` for Triton kernels, so Inductor sees through them), with a fake impl and
``register_autograd``. Fixed arity: a separate op per output signature rather than Optional outputs.
"""

from __future__ import annotations

NAMESPACE = "jagattn"


def qualname(name: str) -> str:
    """``jagattn::<name>``"""
    return f"{NAMESPACE}::{name}"
