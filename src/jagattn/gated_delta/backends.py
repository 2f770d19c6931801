"""The ordered backends of the gated delta rule. ``auto`` takes the first that can run the inputs.

Order: the chunked Triton kernels first, the reference last (it runs anything SPEC.md allows,
slowly). The Triton backend says why it cannot run, from metadata only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from .._core.dispatch import Backend, register_family
from .._core.triton_utils import backend_unavailable_reason, device_reasons
from .reference import gated_delta_reference

if TYPE_CHECKING:
    from .api import GatedDeltaInputs

FAMILY = "gated_delta"


class TritonBackend(Backend):
    name = "triton"
    family = FAMILY
    description = "chunked (64) WY kernels in Triton: fwd + bwd, varlen, GVA, states, l2norm; no gk yet"

    _DTYPES = (torch.float16, torch.bfloat16, torch.float32)

    def _unavailable_reason(self) -> str | None:
        return backend_unavailable_reason()

    def not_supported_reasons(self, inputs: GatedDeltaInputs) -> list[str]:
        reasons = device_reasons(inputs.device_type)
        if inputs.dtype not in self._DTYPES:
            reasons.append(
                f"q/k/v dtype {inputs.dtype} is not supported (fp16, bf16, fp32; fp64 is reference-only)"
            )
        if inputs.has_gk:
            reasons.append("per-key gates (gk) are not implemented in the Triton kernels (reference only)")
        return reasons

    def __call__(self, inputs: GatedDeltaInputs):
        from .ops import gated_delta_fwd

        return gated_delta_fwd(
            inputs.q,
            inputs.k,
            inputs.v,
            inputs.g,
            inputs.beta,
            inputs.initial_state,
            inputs.cu_seqlens,
            inputs.scale,
            inputs.use_qk_l2norm,
        )


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


BACKENDS: tuple[Backend, ...] = (TritonBackend(), ReferenceBackend())
register_family(FAMILY, BACKENDS)
