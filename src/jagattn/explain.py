"""``jagattn.explain``: which backend would run a call, and why every other one would not."""

from __future__ import annotations

import importlib
from typing import Any

from ._core import dispatch

# family -> module whose make_inputs(...) validates that family's arguments
_FAMILY_API = {
    "attention": "jagattn.attention.api",
    "gated_delta": "jagattn.gated_delta.api",
    "hstu": "jagattn.hstu.api",
}


def register_api(family: str, module: str) -> None:
    _FAMILY_API[family] = module


def explain(family: str, /, *args: Any, backend: str = "auto", **kwargs: Any) -> dispatch.Explanation:
    """The backend table for a call: same arguments as the family's function, nothing runs.

    Example: ``print(jagattn.explain("attention", q, k, v, cu, causal=True))``. Arguments are
    validated exactly as the real call would (a bad argument raises the same error).
    ``hstu_attention_cached``: ``explain("hstu", delta_q, k, v, seq_offsets, max_seq_len, alpha=...,
    cached=True)``.
    """
    if family not in _FAMILY_API:
        raise ValueError(f"family: unknown family {family!r}; known: {sorted(_FAMILY_API)}")
    make_inputs = importlib.import_module(_FAMILY_API[family]).make_inputs
    inputs = make_inputs(*args, **kwargs)
    return dispatch.explain_inputs(family, inputs, backend)


def backend_table() -> list[dict[str, Any]]:
    """Every backend of every family with whether it is available here and, if not, why."""
    rows = []
    for fam in dispatch.families():
        for b in dispatch.backends_of(fam):
            ok, why = b.availability()
            rows.append(
                {
                    "family": fam,
                    "backend": b.name,
                    "available": ok,
                    "reason": why or "",
                    "about": b.description,
                }
            )
    return rows
