"""The ordered backends of softmax attention. ``auto`` takes the first that can run the inputs.

Order: fast kernels first, the reference last (it runs anything SPEC.md allows, slowly). The
Triton kernels (``triton/``) and the optional peer adapters (torch ``varlen_attn``,
``flash_attn``, FlexAttention) slot in ahead of the reference as they land.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._core.dispatch import Backend, register_family
from .reference import attention_reference

if TYPE_CHECKING:
    from .api import AttentionInputs

FAMILY = "attention"


class ReferenceBackend(Backend):
    name = "reference"
    family = FAMILY
    description = "pure PyTorch, per-sequence loop; the spec in code (slow, any device, any dtype)"

    def not_supported_reasons(self, inputs: AttentionInputs) -> list[str]:
        return []

    def __call__(self, inputs: AttentionInputs):
        return attention_reference(
            inputs.q,
            inputs.k,
            inputs.v,
            inputs.cu_seqlens_q,
            inputs.cu_seqlens_k,
            causal=inputs.causal,
            window=inputs.window,
            scale=inputs.scale,
            softcap=inputs.softcap,
        )


BACKENDS: tuple[Backend, ...] = (ReferenceBackend(),)
register_family(FAMILY, BACKENDS)
