"""The fp32 route: tiny fp16/bf16 batches run on the fp32 kernels and are rounded back once.

Why. SPEC section 5 bounds the backend's max-abs and RMS error by 2x those of the reference run in
the input dtype. On a batch with a handful of output elements (a few one- to three-token sequences)
both sides are maxima over a few numbers: the reference run can land within a fraction of an ulp of
the gold value by chance while a half-precision kernel, which rounds its tensor-core operands (p,
ds, the normalised q/k, ...) as well as its outputs, lands a full ulp away. Session 15's GPU fuzz
(H200, Triton 3.6, ``benchmarks/fuzz_spec_rule.py --cap-len 2/3``) failed the rule on 9 of 60
attention batches of sequences of at most 2 tokens, 6 of 60 HSTU batches of at most 3 tokens, and
the gated delta bf16 path on 10 of 93 batches at K = 128/256 (one-token sequences, and dg on single
sequences of 150-470 tokens, where the bf16 normalised q/k of the precise path put dg's RMS over the
bound; see gated_delta/README.md).

What. On the fp32 route the op runs its Triton kernels on fp32 copies of the half-precision
inputs (IEEE fp32 products, fp32 intermediates) and rounds the outputs to the input dtype; autograd
rounds the gradients to their leaves' dtypes. Each element is then rounded once from a value within
fp32 noise of the exact one, and a correctly rounded value is at least as close to the gold value
as any other number of that dtype, the reference run's included: the rule holds on every input, up
to the fp32 noise.

When. Only where the cost cannot matter: the largest of ``tokens x heads`` over the op's tensors is
at most the family's limit (host ints only: shapes, no sync), so the kernels are launch-bound either
way and the copies are a few KB. Symbolic sizes (torch.compile / export with dynamic shapes) never
take it: a size test there would become a guard. ``JAGATTN_SMALL_FP32=off`` disables the route,
``on`` takes it for every fp16/bf16 call (tests and experiments; slow on large batches).
"""

from __future__ import annotations

import torch

from .env import env_choice

SMALL_FP32 = env_choice("JAGATTN_SMALL_FP32", ("auto", "on", "off"), "auto")
_HALF = (torch.float16, torch.bfloat16)


def fp32_route(dtype: torch.dtype, sizes, limit: int) -> bool:
    """True when an op on ``dtype`` inputs whose tensors hold ``sizes`` (``tokens x heads`` each: ints,
    or symbolic) runs on the fp32 route (module docstring)."""
    if dtype not in _HALF or SMALL_FP32 == "off":
        return False
    if SMALL_FP32 == "on":
        return True
    return all(isinstance(s, int) for s in sizes) and max(sizes, default=0) <= limit


def upcast(*tensors):
    """fp32 copies of the fp16/bf16 tensors among ``tensors`` (differentiable); None and other
    dtypes pass through."""
    return tuple(t.float() if t is not None and t.dtype in _HALF else t for t in tensors)
