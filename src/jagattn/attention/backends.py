"""The ordered backends of softmax attention. ``auto`` takes the first that can run the inputs.

Order: ``triton`` (our kernels), then the peer adapters of ``adapters.py`` (torch
``varlen_attn``, ``flash_attn``; they run only what they compute exactly as SPEC.md says, so
``auto`` reaches them only when the Triton backend is unavailable), then the reference (anything
SPEC.md allows, slowly).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from .._core import triton_utils
from .._core.dispatch import Backend, PureTorchBackend, register_family
from .._core.library import eager_call
from .._core.precision import fp32_route, upcast
from .adapters import FlashAttnBackend, TorchVarlenBackend
from .reference import attention_reference

if TYPE_CHECKING:
    from .api import AttentionInputs

FAMILY = "attention"


_OPS_ERROR: str | None = triton_utils.triton_import_error()
if _OPS_ERROR is None:
    try:
        # Registers jagattn::attention_fwd / attention_bwd at import, so the first call may
        # already be under torch.compile (an import inside traced code would break the graph).
        from . import ops  # noqa: F401
    except Exception as exc:  # a broken triton install must not break `import jagattn`
        _OPS_ERROR = f"jagattn.attention.ops failed to import ({type(exc).__name__}: {exc})"

MAX_HEAD_DIM = 256
MAX_GRID_Y = 65535  # CUDA's limit on grid axis 1, which carries the heads
# the fp32 route (_core/precision.py) up to this many tokens x heads of q and of k/v: the GPU fuzz's
# failures of the SPEC rule on tiny batches had at most 12 (session 15); the route costs a few casts
SMALL_FP32_MAX_ROWS = 1024


class TritonBackend(Backend):
    name = "triton"
    family = FAMILY
    description = (
        "jagattn Triton kernels: varlen, GQA in place, causal/window/softcap, lse, Dv != D, D <= 256; "
        "fp16/bf16 on tensor cores; fp32 forward without softcap in IEEE precision (fp32 training: reference)"
    )

    def _unavailable_reason(self) -> str | None:
        return triton_utils.backend_unavailable_reason() or _OPS_ERROR

    def not_supported_reasons(self, inputs: AttentionInputs) -> list[str]:
        reasons = list(triton_utils.device_reasons(inputs.device_type))
        if inputs.dtype == torch.float64:
            reasons.append(
                "fp64 is not supported by the Triton kernels (fp16, bf16; fp32 forward without softcap)"
            )
        if inputs.dtype == torch.float32 and (inputs.requires_grad or inputs.softcap > 0):
            # The kernels work in the exp2 domain with the scale folded into the scores and recompute
            # p from the saved lse in the backward; in fp16/bf16 that is far below the input rounding,
            # but in fp32 it is 3-40x the error of an fp32 reference: a random-input fuzz under the
            # interpreter failed the SPEC section 5 rule in ~3% of fp32 cases (every gradient failure
            # and the softcap forward), never in fp16 beyond single-element noise.
            reasons.append(
                "fp32 with gradients or softcap: the kernels' exp2-domain softmax (folded scale, p recomputed "
                "from lse, tanh softcap via exp2) is not within the SPEC tolerance of an fp32 reference; "
                "fp32 forward without softcap, fp16 and bf16 run on triton"
            )
        if inputs.head_dim > MAX_HEAD_DIM or inputs.head_dim_v > MAX_HEAD_DIM:
            reasons.append(
                f"head dims D={inputs.head_dim}, Dv={inputs.head_dim_v}: the kernels support at most {MAX_HEAD_DIM}"
            )
        if inputs.num_heads_q > MAX_GRID_Y:
            reasons.append(f"Hq={inputs.num_heads_q} exceeds the {MAX_GRID_Y} heads a launch grid can carry")
        return reasons

    def __call__(self, inputs: AttentionInputs):
        from . import ops

        left, right = inputs.window
        q, k, v = inputs.q, inputs.k, inputs.v
        # tiny fp16/bf16 batches: fp32 kernels, outputs rounded once (_core/precision.py)
        small = fp32_route(
            inputs.dtype, (q.shape[0] * q.shape[1], k.shape[0] * k.shape[1]), SMALL_FP32_MAX_ROWS
        )
        if small:
            q, k, v = upcast(q, k, v)
        out, lse = eager_call(
            ops.attention_fwd,
            q,
            k,
            v,
            inputs.cu_seqlens_q,
            inputs.cu_seqlens_k,
            inputs.max_seqlen_q,
            inputs.max_seqlen_k,
            left,
            right,
            inputs.scale,
            inputs.softcap,
            inputs.deterministic,
        )
        return (out.to(inputs.dtype), lse) if small else (out, lse)


class ReferenceBackend(PureTorchBackend):
    family = FAMILY
    description = "pure PyTorch, per-sequence loop; the spec in code (slow, any device, any dtype)"

    def run(self, inputs: AttentionInputs):
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


BACKENDS: tuple[Backend, ...] = (
    TritonBackend(),
    TorchVarlenBackend(),
    FlashAttnBackend(),
    ReferenceBackend(),
)
register_family(FAMILY, BACKENDS)
