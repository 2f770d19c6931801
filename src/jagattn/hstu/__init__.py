"""HSTU pointwise attention over packed sequences (SPEC.md section 2)."""

from . import backends  # noqa: F401  (registers the family)
from .api import hstu_attention, hstu_attention_cached

__all__ = ["hstu_attention", "hstu_attention_cached"]
