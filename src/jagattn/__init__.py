"""jagattn: attention kernels over packed variable-length ("jagged") sequences.

Public surface: :func:`attention`, :func:`hstu_attention`, :func:`hstu_attention_cached`,
:func:`gated_delta_rule`, :func:`explain`, :func:`use_backend`, :class:`NotSupportedError`.
The contract is SPEC.md; the ``reference`` backend of each family is that contract in code.
"""

from __future__ import annotations

__version__ = "0.1.0"

from ._core.dispatch import NotSupportedError, use_backend
from .attention import attention
from .explain import backend_table, explain
from .gated_delta import gated_delta_rule
from .hstu import hstu_attention, hstu_attention_cached

__all__ = [
    "NotSupportedError",
    "__version__",
    "attention",
    "backend_table",
    "explain",
    "gated_delta_rule",
    "hstu_attention",
    "hstu_attention_cached",
    "use_backend",
]
