"""The fp32 route: tiny fp16/bf16 batches run on the fp32 kernels and are rounded back once.

Why. SPEC section 5 bounds the backend's max-abs and RMS error by 2x those of the reference run in
the input dtype. On a batch with a handful of output elements (a few one- to three-token sequences)
both sides are maxima over a few numbers: the reference run can land within a fraction of an ulp of
the gold value by chance while a half-precision kernel, which rounds its tensor-core operands (p,
ds, the normalised q/k, ...) as well as its outputs, lands a full ulp away. Session 15's GPU fuzz
(H200, Triton 3.6, ``benchmarks/fuzz_spec_rule.py --cap-len 2/3``) failed the rule on 9 of 60
attention batches of sequences of at most 2 tokens, 6 of 60 HSTU batches of at most 3 tokens, and
the gated delta bf16 path on 9 of 93 batches at K = 128/256 (one-token sequences, and dg on single
sequences of 178-466 token-heads, where the bf16 normalised q/k of the precise path put dg's RMS
over the bound; see gated_delta/README.md). With the output gradients rounded for the gold as well
(``--rounded-grads``) the half kernels still failed 8 of 60 attention, 5 of 60 HSTU and 3 of 12
gated delta tiny batches, each with the fp32 reference passing: the kernels' own rounding.

What. On the fp32 route the op runs its Triton kernels on fp32 copies of the half-precision
inputs (IEEE fp32 products, fp32 intermediates) and rounds the outputs to the input dtype; autograd
rounds the gradients to their leaves' dtypes. Each output is then rounded once from a value within
fp32 noise of the exact one: no number of the dtype is closer to the gold than a correctly rounded
one, the reference run's included. Gradients get the same argument only when the output gradient
the op receives is the one the gold uses (a test that calls ``out.backward(g)`` with ``g`` in the
output's dtype): if the gold differentiates with exact fp64 weights while the op receives them
rounded to fp16/bf16, even the fp32 reference rounded once can fail the rule on a tiny batch (seen
on the CPU for HSTU and on the H200 for gated delta, session 15). This is a measured improvement,
not a proof: with rounded output gradients session 15's fuzz found no failure on the route (0 of
25 HSTU, 26 attention, 9 gated delta tiny GPU batches, nor in the CPU fp16 fuzz).

When. Only on small batches: the largest of ``tokens x heads`` over the op's tensors is at most the
family's limit (host ints only: shapes, no sync). It is not free: session 15 measured on the H200
(``benchmarks/fp32_route_cost.py``, bf16, fwd+bwd per call) attention [3, 2, 1] 1339 vs 1392 us and
HSTU 1335 vs 1082 us (launch-bound both ways), gated delta [3, 2, 1] 3834 vs 2104 us (its fp32
kernels are slower and compile far longer); every family's limit is 1024. Under ``torch.compile`` the
test is made on the traced sizes like in eager (with dynamic shapes it becomes a guard: a batch that
crosses the limit recompiles); ``torch.export`` never takes the route (a guard there would restrict the
exported dims), nor does any other trace with symbolic sizes.
``JAGATTN_SMALL_FP32=off`` disables the route, ``on`` takes it for every fp16/bf16 call (tests and
experiments; slow on large batches). Under Triton's interpreter bf16 takes it at every size, whatever the setting
(``fp32_route``).
"""

from __future__ import annotations

import torch

from .env import env_choice
from .triton_utils import interpreter_enabled

SMALL_FP32 = env_choice("JAGATTN_SMALL_FP32", ("auto", "on", "off"), "auto")
_HALF = (torch.float16, torch.bfloat16)


def exporting() -> bool:
    """True while ``torch.export`` traces (strict or not), False under plain ``torch.compile`` and in eager.

    Not ``torch.compiler.is_exporting()``: dynamo before torch 2.13 folds that call to True under every
    ``torch.compile`` (its table of tracing-state functions maps it to True; 2.13 reads the flag instead). Session
    47 found the fp32 route and gated delta's token-loop choice switched off in every compiled function on the
    device's torch 2.11, so compiled calls differed from eager ones (tests/test_compile.py on cuda). The flag
    itself is what both versions set around an export trace (``torch._export.utils._compiling_state_context``);
    dynamo reads it as a constant of the graph being traced.
    """
    flag = getattr(torch.compiler, "_is_exporting_flag", None)
    if flag is None:  # a torch without the flag: the public call (may over-report under compile, see above)
        return torch.compiler.is_exporting()
    return bool(flag)


def fp32_route(dtype: torch.dtype, sizes, limit: int) -> bool:
    """True when an op on ``dtype`` inputs whose tensors hold ``sizes`` (``tokens x heads`` each: ints,
    or symbolic) runs on the fp32 route (module docstring). bf16 under Triton's interpreter always does: the
    interpreter computes ``tl.dot`` on bf16 operands wrongly (Triton 3.9: errors of ~1e9 on unit-normal
    inputs; session 27 found the public ops returning that on CPU batches past the small-batch limit)."""
    if dtype not in _HALF:
        return False
    if dtype == torch.bfloat16 and interpreter_enabled():
        return True
    if SMALL_FP32 == "off":
        return False
    if SMALL_FP32 == "on":
        return True
    if exporting():
        # an exported program must hold for every size its dims admit: under strict export dynamo shows
        # symbolic sizes as ints, and a size test became a guard that export rejects ("Constraints violated")
        return False
    # one size at a time, not max(): dynamo cannot trace max(..., default=) over symbolic sizes. Under
    # torch.compile a size test is a guard (a recompile where a batch crosses the limit); elsewhere a
    # symbolic size (a torch.SymInt, not an int) ends the test
    for s in sizes:  # noqa: SIM110 (a plain loop: what dynamo traces for sure)
        if not isinstance(s, int) or s > limit:
            return False
    return True


def upcast(*tensors):
    """fp32 copies of the fp16/bf16 tensors among ``tensors`` (differentiable); None and other
    dtypes pass through."""
    return tuple(t.float() if t is not None and t.dtype in _HALF else t for t in tensors)
