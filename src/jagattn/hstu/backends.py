"""The ordered backends of HSTU attention. ``auto`` takes the first that can run the inputs.

One family serves both ``hstu_attention`` and ``hstu_attention_cached``; ``inputs.cached`` says
which call it is. Order: fast kernels first, the reference last (it runs anything SPEC.md
allows, slowly).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._core.dispatch import Backend, register_family
from .reference import hstu_reference_from_inputs

if TYPE_CHECKING:
    from .api import HstuInputs

FAMILY = "hstu"


class ReferenceBackend(Backend):
    name = "reference"
    family = FAMILY
    description = (
        "pure PyTorch, per-sequence loop with a dense mask; the spec in code (slow, any device, any dtype)"
    )

    def not_supported_reasons(self, inputs: HstuInputs) -> list[str]:
        return []

    def __call__(self, inputs: HstuInputs):
        return hstu_reference_from_inputs(inputs)


BACKENDS: tuple[Backend, ...] = (ReferenceBackend(),)
register_family(FAMILY, BACKENDS)
