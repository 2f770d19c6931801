"""Softmax attention over packed variable-length sequences (SPEC.md section 1)."""

from . import backends  # noqa: F401  (registers the family)
from .api import attention

__all__ = ["attention"]
