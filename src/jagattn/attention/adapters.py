"""Peer backends of softmax attention: torch's ``varlen_attn`` and ``flash_attn``'s varlen function.

Both run FlashAttention-2 kernels. They are registered after ``triton`` and before the
reference, so ``auto`` uses them only when the Triton backend cannot run (triton missing or
broken) and the peer computes exactly what SPEC.md section 1 asks for; an explicit
``backend="torch_varlen"`` / ``"flash_attn"`` runs them for comparison. Their reasons are
metadata only and honest about every difference from the contract:

- bottom-right causal/window alignment, ``-inf`` lse and zero output for rows without a
  visible key: FA2 matches the first two after our conversion (FA2 reports ``+inf`` lse there,
  which the adapters turn into ``-inf``);
- GQA: FA2 reads kv head ``h // group`` in place; torch builds whose ``varlen_attn`` has no
  ``enable_gqa`` flag (torch 2.11) reject ``Hq != Hkv`` because running them needs K/V
  expanded in memory, which SPEC.md forbids;
- no softcap in torch's ``varlen_attn``; no ``Dv != D`` in FA2; head dim a multiple of 8 and
  at most 256; fp16/bf16 on CUDA only;
- their backward accumulates dQ with float atomics (not bit-reproducible), so
  ``deterministic=True`` with gradients is rejected for torch's (flash_attn has a flag);
- the lse they return carries no gradient, so ``return_lse`` with gradients is rejected.
"""

from __future__ import annotations

import inspect
import math
from typing import TYPE_CHECKING

import torch

from .._core.dispatch import Backend

if TYPE_CHECKING:
    from .api import AttentionInputs

FAMILY = "attention"
_LOWP = (torch.float16, torch.bfloat16)


def _common_reasons(inputs: AttentionInputs, who: str) -> list[str]:
    reasons = []
    if inputs.device_type != "cuda":
        reasons.append(f"{who} runs on CUDA tensors only, got {inputs.device_type}")
    if inputs.dtype not in _LOWP:
        reasons.append(f"{who} supports fp16/bf16 only, got {inputs.dtype}")
    d, dv = inputs.head_dim, inputs.head_dim_v
    if dv != d:
        reasons.append(f"{who} needs Dv == D (FlashAttention-2), got D={d}, Dv={dv}")
    if d > 256 or d % 8 != 0:
        reasons.append(f"{who} needs a head dim that is a multiple of 8 and <= 256, got D={d}")
    if inputs.return_lse and inputs.requires_grad:
        reasons.append(
            f"{who} returns lse without a gradient; return_lse=True with gradients needs another backend"
        )
    return reasons


def _lse_to_spec(lse: torch.Tensor, hq: int, tq: int) -> torch.Tensor:
    """FA2's varlen lse ``[Hq, Tq]`` with ``+inf`` for rows without keys -> SPEC's ``-inf``."""
    if tuple(lse.shape) != (hq, tq) and tuple(lse.shape) == (tq, hq):
        lse = lse.transpose(0, 1)
    lse = lse.float()
    return torch.where(lse == math.inf, torch.full_like(lse, -math.inf), lse)


class TorchVarlenBackend(Backend):
    name = "torch_varlen"
    family = FAMILY
    description = "torch.nn.attention.varlen.varlen_attn (FlashAttention-2 inside torch); optional peer"

    def __init__(self) -> None:
        super().__init__()
        self._params: frozenset[str] = frozenset()

    def _unavailable_reason(self) -> str | None:
        try:
            from torch.nn.attention.varlen import varlen_attn
        except ImportError:
            return f"torch {torch.__version__} has no torch.nn.attention.varlen.varlen_attn"
        if not torch.cuda.is_available():
            return "needs CUDA (its kernels are FlashAttention-2 CUDA kernels)"
        self._params = frozenset(inspect.signature(varlen_attn).parameters)
        if "window_size" not in self._params:
            return f"torch {torch.__version__}'s varlen_attn has no window_size argument (causal needs it)"
        return None

    @property
    def has_gqa(self) -> bool:
        return "enable_gqa" in self._params

    def not_supported_reasons(self, inputs: AttentionInputs) -> list[str]:
        reasons = _common_reasons(inputs, "varlen_attn")
        if inputs.num_heads_q != inputs.num_heads_kv and not self.has_gqa:
            reasons.append(
                f"GQA/MQA (Hq={inputs.num_heads_q}, Hkv={inputs.num_heads_kv}): torch {torch.__version__}'s "
                "varlen_attn has no enable_gqa; it would need K/V expanded in memory, which SPEC.md forbids"
            )
        if inputs.softcap > 0:
            reasons.append("varlen_attn has no softcap")
        if inputs.deterministic and inputs.requires_grad:
            reasons.append("varlen_attn's backward accumulates dQ with float atomics: not bit-reproducible")
        return reasons

    def __call__(self, inputs: AttentionInputs):
        from torch.nn.attention.varlen import AuxRequest, varlen_attn

        kwargs = {}
        if inputs.num_heads_q != inputs.num_heads_kv:
            kwargs["enable_gqa"] = True
        o, lse = varlen_attn(
            inputs.q,
            inputs.k,
            inputs.v,
            inputs.cu_seqlens_q.to(torch.int32),
            inputs.cu_seqlens_k.to(torch.int32),
            inputs.max_seqlen_q,
            inputs.max_seqlen_k,
            return_aux=AuxRequest(lse=True),
            scale=inputs.scale,
            window_size=tuple(inputs.window),
            **kwargs,
        )
        return o, _lse_to_spec(lse, inputs.num_heads_q, inputs.q.shape[0])


def _version_tuple(text: str) -> tuple[int, ...]:
    out = []
    for part in text.split(".")[:3]:
        digits = "".join(ch for ch in part if ch.isdigit())
        out.append(int(digits) if digits else 0)
    return tuple(out)


class FlashAttnBackend(Backend):
    name = "flash_attn"
    family = FAMILY
    description = "flash_attn.flash_attn_varlen_func (FlashAttention-2 package) when installed; optional peer"

    def __init__(self) -> None:
        super().__init__()
        self._version: tuple[int, ...] = (0,)

    def _unavailable_reason(self) -> str | None:
        try:
            import flash_attn
            from flash_attn import flash_attn_varlen_func  # noqa: F401
        except Exception as exc:  # ImportError, or a build that does not match this torch
            return f"flash_attn is not importable ({type(exc).__name__}: {exc})"
        if not torch.cuda.is_available():
            return "needs CUDA"
        self._version = _version_tuple(getattr(flash_attn, "__version__", "0"))
        if self._version < (2, 3):
            return f"flash_attn {flash_attn.__version__} predates sliding windows (needs >= 2.3)"
        return None

    def not_supported_reasons(self, inputs: AttentionInputs) -> list[str]:
        reasons = _common_reasons(inputs, "flash_attn")
        if inputs.softcap > 0 and self._version < (2, 6):
            reasons.append(f"flash_attn {'.'.join(map(str, self._version))} has no softcap (needs >= 2.6)")
        return reasons

    def __call__(self, inputs: AttentionInputs):
        from flash_attn import flash_attn_varlen_func

        kwargs = {}
        if inputs.softcap > 0:
            kwargs["softcap"] = inputs.softcap
        left, right = inputs.window
        o, lse, _ = flash_attn_varlen_func(
            inputs.q,
            inputs.k,
            inputs.v,
            inputs.cu_seqlens_q.to(torch.int32),
            inputs.cu_seqlens_k.to(torch.int32),
            inputs.max_seqlen_q,
            inputs.max_seqlen_k,
            dropout_p=0.0,
            softmax_scale=inputs.scale,
            causal=inputs.causal,
            window_size=(left, right),
            deterministic=inputs.deterministic,
            return_attn_probs=True,
            **kwargs,
        )
        return o, _lse_to_spec(lse, inputs.num_heads_q, inputs.q.shape[0])
