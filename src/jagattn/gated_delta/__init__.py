"""Chunked gated delta rule (Gated DeltaNet) over packed variable-length sequences (SPEC.md section 3)."""

from . import backends  # noqa: F401  (registers the family)
from .api import gated_delta_rule

__all__ = ["gated_delta_rule"]
