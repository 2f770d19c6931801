"""The ordered backends of HSTU attention. ``auto`` takes the first that can run the inputs.

One family serves both ``hstu_attention`` and ``hstu_attention_cached``; ``inputs.cached`` says
which call it is. Order: fast kernels first, the reference last (it runs anything SPEC.md
allows, slowly).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from .._core import triton_utils
from .._core.dispatch import Backend, PureTorchBackend, register_family
from .._core.library import eager_call
from .._core.precision import fp32_route, upcast
from .reference import hstu_reference_from_inputs

if TYPE_CHECKING:
    from .api import HstuInputs

FAMILY = "hstu"
MAX_HEAD_DIM = 256
_GRID_LIMIT = 2**31 - 1
# the fp32 route (_core/precision.py) up to this many tokens x heads: the GPU fuzz's failures of the SPEC
# rule on tiny batches had at most 24 (session 15); the route costs a few casts
SMALL_FP32_MAX_ROWS = 1024


class TritonBackend(Backend):
    name = "triton"
    family = FAMILY
    description = (
        "Triton kernels: block-skipping forward, dK/dV per key block and dQ per query block in fp32 "
        "(deterministic; JAGATTN_HSTU_ATOMIC_DQ=1 opts into atomic dQ), cached delta-query forward"
    )

    def _unavailable_reason(self) -> str | None:
        return triton_utils.backend_unavailable_reason()

    def not_supported_reasons(self, inputs: HstuInputs) -> list[str]:
        reasons = list(triton_utils.device_reasons(inputs.device_type))
        if inputs.dtype == torch.float64:
            reasons.append("dtype float64 is not supported (fp16/bf16, and fp32 with IEEE-precision dots)")
        if inputs.head_dim > MAX_HEAD_DIM or inputs.head_dim_v > MAX_HEAD_DIM:
            reasons.append(
                f"head dims Dq={inputs.head_dim}, Dv={inputs.head_dim_v}: the kernels take at most {MAX_HEAD_DIM}"
            )
        if inputs.cached and inputs.requires_grad:
            reasons.append(
                "hstu_attention_cached has no backward kernel (forward only); call it under torch.no_grad()"
            )
        rows = inputs.delta if inputs.cached else inputs.max_seq_len
        if isinstance(rows, int) and -(-rows // 16) * inputs.batch_size * inputs.num_heads > _GRID_LIMIT:
            reasons.append(
                f"grid of {inputs.batch_size} sequences x {inputs.num_heads} heads x {rows} rows is too large"
            )
        return reasons

    def __call__(self, inputs: HstuInputs):
        from . import ops

        q, k, v = inputs.q, inputs.k, inputs.v
        # tiny fp16/bf16 batches: fp32 kernels, output rounded once (_core/precision.py)
        small = fp32_route(
            inputs.dtype, (q.shape[0] * q.shape[1], k.shape[0] * k.shape[1]), SMALL_FP32_MAX_ROWS
        )
        if small:
            q, k, v = upcast(q, k, v)
        common = (
            k,
            v,
            inputs.seq_offsets,
            inputs.num_targets,
            inputs.max_seq_len,
            inputs.alpha,
            inputs.inv_scale_len,
            inputs.contextual_seq_len,
            inputs.max_attn_len,
            inputs.min_full_attn_seq_len,
        )
        if inputs.cached:
            out = eager_call(ops.hstu_cached_fwd, q, *common)
        else:
            out = eager_call(ops.hstu_fwd, q, *common, inputs.deterministic)
        return out.to(inputs.dtype) if small else out


class ReferenceBackend(PureTorchBackend):
    family = FAMILY
    description = (
        "pure PyTorch, per-sequence loop with a dense mask; the spec in code (slow, any device, any dtype)"
    )

    def run(self, inputs: HstuInputs):
        return hstu_reference_from_inputs(inputs)


BACKENDS: tuple[Backend, ...] = (TritonBackend(), ReferenceBackend())
register_family(FAMILY, BACKENDS)
