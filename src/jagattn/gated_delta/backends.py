"""The ordered backends of the gated delta rule. ``auto`` takes the first that can run the inputs.

Order: the chunked Triton kernels first, the reference last (it runs anything SPEC.md allows,
slowly). The Triton backend says why it cannot run, from metadata only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from .._core.dispatch import Backend, PureTorchBackend, register_family
from .._core.env import env_choice
from .._core.library import eager_call
from .._core.precision import exporting, fp32_route, upcast
from .._core.triton_utils import backend_unavailable_reason, device_reasons
from .reference import gated_delta_reference

if TYPE_CHECKING:
    from .api import GatedDeltaInputs

FAMILY = "gated_delta"


# Without gradients, batches whose average sequence length is at most this run the fused recurrent
# kernel (decoding, very short sequences); longer ones the chunked kernels. Shapes only, no sync.
# Measured on an H200 (Triton 3.6, bf16, H=HV=16, K=V=128, with initial and final state,
# benchmarks/gated_delta_probe.py, session 4), recurrent / chunked forward in ms:
#   scalar g, 64 seqs:   len 8: 0.149 / 0.208   len 16: 0.267 / 0.220
#   scalar g, 2048 seqs: len 8: 3.95 / 4.67     len 16: 7.42 / 4.90
#   per-key gk, 64 seqs: len 64: 1.16 / 1.51    len 128: 2.30 / 2.89 (2048 seqs, len 64: 35.6 / 48.4)
# gk after session 37's faster chunked kernels (H100, session 38, same probe, results
# 2026-11-27-s38-h100-round1/crossover.log; kkt at 4 warps, the 2-warp kkt taken since is faster still):
#   per-key gk, 64 seqs: len 32: 0.588 / 0.816  len 64: 1.145 / 1.064  len 128: 2.246 / 2.012
#   per-key gk, 2048 seqs: len 32: 17.9 / 24.4  len 64: 35.1 / 32.9
# (scalar g there: 64 seqs len 8 0.155 / 0.570, len 16 0.271 / 0.268; 2048 seqs len 8 4.05 / 3.82: 8 kept)
RECURRENT_MAX_AVG_LEN = 8
RECURRENT_MAX_AVG_LEN_GK = 32
# fp32 inputs without gradients take the recurrent kernel at any length (use_recurrent); False: the rule above
FP32_RECURRENT = True
# fp32 inputs WITH gradients (JAGATTN_GD_FP32_TRAIN, read at import; the module value at every call). "recurrent"
# (default since session 53): the token loop in Triton, forward and backward (ops.gated_delta_fwd_recurrent_train;
# triton/recurrent.py): fp32 states checkpointed every 16 tokens, the backward replaying each block. "reference": the
# triton backend refuses them (the chunked fp32 backward misses the SPEC rule, see not_supported_reasons) and auto
# runs the reference's Python token loop. Memory beyond the inputs and gradients: the checkpoints (T / 16 + N states)
# and fp32 per-V-block parts of dq, dk (and dgk), V / 16 x [T, HV, K] each. Session 53, H200, Triton 3.6, fp32,
# K = V = 128, l2norm, an initial state, fwd + bwd (benchmarks/gd_fp32_train_cost.py, results 2026-11-29-s53-h200-
# round4/5): H16 1 x 2048: 16.4 ms, peak 521 MiB, against the reference's 3080 ms and 4354 MiB (gradients within
# 3.5e-7..5.3e-7 of max|ref|); H16 8 x 4096: 74.9 ms, 8.3 GiB; 64 x 512: 65.6 ms, 8.6 GiB; 1 x 32768: 262 ms,
# 8.3 GiB (the reference there, estimated, not run: ~34 GiB of per-token states). V blocks of 32 (JAGATTN_GD_CONFIG=bwd_recurrent=32,8,1)
# took 102 ms / 6.2 GiB on 8 x 4096: the default stays 16. Its gpu tests pass there (opcheck, compile, the rule).
FP32_TRAIN = env_choice("JAGATTN_GD_FP32_TRAIN", ("reference", "recurrent"), "recurrent")
# The fp32 route (_core/precision.py) up to this many tokens x value heads. Session 15's GPU fuzz (bf16,
# H200) failed the SPEC rule on one-token batches (dbeta, dg: 3 of 12 with output gradients in the output
# dtype, every one passed by the fp32 reference) and on single sequences of 150-470 tokens at K = 128/256
# (dg, T x HV up to 466: the precise path's bf16 normalised q/k; fp32 q/k copies or the fp32 route pass).
# The fp32 kernels cost ~2x per call at a few tokens and 3.4x at 4096 token-heads (fwd+bwd 1.98 -> 3.81
# and 1.86 -> 6.40 ms, round 3) and compile slower: hence 1024, about twice the largest failure seen.
SMALL_FP32_MAX_TOKEN_HEADS = 1024


class TritonBackend(Backend):
    name = "triton"
    family = FAMILY
    description = (
        "Triton: chunked (64) WY kernels, fwd + bwd, varlen, GVA, states, l2norm, per-key gates gk; "
        "fused recurrent forward for short sequences and fp32 inference, and fp32 training on that token "
        "loop (checkpointed backward); bf16 is the fast dtype (fp16 keeps fp32 "
        "intermediates on split-tf32 products: about 10x bf16's time at 32k tokens on H200)"
    )

    _DTYPES = (torch.float16, torch.bfloat16, torch.float32)

    def _unavailable_reason(self) -> str | None:
        return backend_unavailable_reason()

    def not_supported_reasons(self, inputs: GatedDeltaInputs) -> list[str]:
        reasons = device_reasons(inputs.device_type)
        if inputs.dtype not in self._DTYPES:
            reasons.append(
                f"q/k/v dtype {inputs.dtype} is not supported (fp16, bf16, fp32; fp64 is reference-only)"
            )
        if inputs.dtype == torch.float32 and inputs.requires_grad and FP32_TRAIN != "recurrent":
            # The chunked backward (WY solve, gate gradients by identities) rounds differently from the
            # token loop; in fp32 the SPEC section 5 yardstick (2x an fp32 token loop's error) is tight
            # enough that it misses on some inputs: dk up to 1.35x the bound on H200 / Triton 3.6, and
            # under the interpreter 3 of 40 random scalar-g batches (dv/dk 1.1-1.4x) and 1 of 30 with
            # strong per-key gates (dgk 1.5x), session 3. The forward passes. fp32 training therefore
            # runs on the token loop by default (FP32_TRAIN above); this reason only where that is switched off.
            reasons.append(
                "fp32 with gradients: the token loop's backward is switched off (JAGATTN_GD_FP32_TRAIN=reference, "
                "backends.FP32_TRAIN) and the chunked backward misses the SPEC tolerance against an fp32 reference on some inputs (dk/dv "
                "up to 1.4x the bound); set it to recurrent (the default) to train fp32 on triton"
            )
        return reasons

    @staticmethod
    def use_recurrent(inputs: GatedDeltaInputs) -> bool:
        if inputs.requires_grad:
            return False
        if inputs.dtype == torch.float32 and FP32_RECURRENT:
            # fp32 inputs (the dtype alone: no shape guard): the token loop, for accuracy. The chunked forward's WY
            # inverse rounds differently from the token loop, and the SPEC rule's fp32 yardstick is tight: session
            # 35's CPU fuzz found o at 1.5x the bound (seed 35247: lengths [51, 51, 1, 2], K = 16, GVA, l2norm), which
            # the recurrent kernel passes. It is also the faster fp32 forward at every length measured: H200, Triton 3.6,
            # 32768 tokens, H = 16, K = V = 128 (benchmarks/fp32_recurrent_cost.py, session 36): 8 sequences 5.6 ms
            # against the chunked fp32 forward's 160 ms, one sequence 40 ms against 152 (bf16 chunked: 0.76 / 1.31)
            return True
        if exporting() or not isinstance(inputs.total_tokens, int) or not isinstance(inputs.num_seqs, int):
            # Symbolic shapes (torch.export / compile with dynamic dims): this speed-only choice
            # would become a guard excluding valid batches; the chunked kernels run every batch. Strict
            # export shows symbolic sizes as ints (dynamo), hence the export test; under torch.compile
            # the guard only recompiles, so the choice stays
            return False
        limit = RECURRENT_MAX_AVG_LEN_GK if inputs.has_gk else RECURRENT_MAX_AVG_LEN
        return inputs.total_tokens <= limit * max(inputs.num_seqs, 1)

    def __call__(self, inputs: GatedDeltaInputs):
        q, k, v = inputs.q, inputs.k, inputs.v
        # tiny fp16/bf16 batches: fp32 kernels, o rounded once (_core/precision.py)
        small = fp32_route(inputs.dtype, (q.shape[0] * v.shape[1],), SMALL_FP32_MAX_TOKEN_HEADS)
        if small:
            q, k, v = upcast(q, k, v)
        o, final_state = self._run(inputs, q, k, v)
        return (o.to(inputs.dtype), final_state) if small else (o, final_state)

    def _run(self, inputs: GatedDeltaInputs, q, k, v):
        from . import ops

        train = inputs.requires_grad and inputs.dtype == torch.float32 and FP32_TRAIN == "recurrent"
        if train or self.use_recurrent(inputs):
            # the token loop: fp32 training (the chunked backward misses the SPEC rule in fp32: the training op keeps
            # checkpoints for its backward), or forward only (decoding, short sequences, fp32 inference)
            op = ops.gated_delta_fwd_recurrent_train if train else ops.gated_delta_fwd_recurrent
            args = (inputs.g, inputs.beta, inputs.gk, inputs.initial_state, inputs.cu_seqlens)
            return eager_call(op, q, k, v, *args, inputs.scale, inputs.use_qk_l2norm)[:2]
        if inputs.has_gk:
            # per-key gates: their own chunked kernels (triton/chunk_gk.py); g is folded into gk there
            return ops.chunked_fwd_gk(
                q,
                k,
                v,
                inputs.g,
                inputs.beta,
                inputs.gk,
                inputs.initial_state,
                inputs.cu_seqlens,
                inputs.scale,
                inputs.use_qk_l2norm,
            )
        return ops.chunked_fwd(
            q,
            k,
            v,
            inputs.g,
            inputs.beta,
            inputs.initial_state,
            inputs.cu_seqlens,
            inputs.scale,
            inputs.use_qk_l2norm,
        )


class ReferenceBackend(PureTorchBackend):
    family = FAMILY
    description = "pure PyTorch token loop; the spec in code (slow, any device, any dtype)"

    def run(self, inputs: GatedDeltaInputs):
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
