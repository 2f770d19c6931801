"""The ordered backends of the gated delta rule. ``auto`` takes the first that can run the inputs.

Order: fast kernels first, the reference last (it runs anything SPEC.md allows, slowly).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._core.dispatch import Backend, register_family
from .reference import gated_delta_reference

if TYPE_CHECKING:
    from .api import GatedDeltaInputs

FAMILY = "gated_delta"


class ReferenceBackend(Backend):
    name = "reference"
    family = FAMILY
    description = "pure PyTorch token loop; the spec in code (slow, any device, any dtype)"

    def not_supported_reasons(self, inputs: GatedDeltaInputs) -> list[str]:
        return []

    def __call__(self, inputs: GatedDeltaInputs):
        return gated_delta_reference(
            inputs.q,
            inputs.k,
            inputs.v,
            inputs.g,
            inputs.beta,
            inputs.cu_seqlens,
            scale=inputs.scale,
            initial_state=inputs.initial_state,
            use_qk_l2norm=inputs.use_qk_l2norm,
            gk=inputs.gk,
        )


BACKENDS: tuple[Backend, ...] = (ReferenceBackend(),)
register_family(FAMILY, BACKENDS)
