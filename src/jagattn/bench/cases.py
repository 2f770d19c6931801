"""Suite rows turned into tensors, and each family's call of the public jagattn function.

A :class:`Problem` is one row's concrete batch: the packed per-token tensors (dim 0 = token),
the per-sequence tensors (dim 0 = sequence), ``cu_seqlens`` and the scalar flags. A
:class:`Family` knows how to build a problem from a :class:`~jagattn.bench.suites.Row`, how to
call ``jagattn.<function>(..., backend=name)`` on it, how to ask ``jagattn.explain`` about it,
and its FLOP count (``flops.py``). Problems can be cut to a subset of their sequences (the
correctness check runs the reference on a subset of a big batch) and cast (the gold reference
runs in fp32 on a GPU, fp64 on a CPU).
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Sequence
from typing import Any

import torch

from . import flops as _flops
from .suites import Row, describe_lengths, draw_lengths


@dataclasses.dataclass
class Problem:
    """One row's batch. ``tensors`` are the differentiable packed inputs in call order."""

    row: Row
    lengths: list[int]
    tensors: dict[str, torch.Tensor]
    grad_names: tuple[str, ...]
    seq_host: dict[str, list[int]]
    params: dict[str, Any]
    device: torch.device
    dtype: torch.dtype

    @property
    def family(self) -> str:
        return self.row.family

    @property
    def tokens(self) -> int:
        return sum(self.lengths)

    @property
    def cu_seqlens(self) -> torch.Tensor:
        return self.cu(torch.int32)

    def cu(self, dtype: torch.dtype = torch.int32) -> torch.Tensor:
        key = ("cu", dtype)
        cache = self.__dict__.setdefault("_cache", {})
        if key not in cache:
            offs = [0]
            for n in self.lengths:
                offs.append(offs[-1] + n)
            cache[key] = torch.tensor(offs, dtype=dtype, device=self.device)
        return cache[key]

    def seq_tensor(self, name: str, dtype: torch.dtype = torch.int64) -> torch.Tensor | None:
        if name not in self.seq_host:
            return None
        key = (name, dtype)
        cache = self.__dict__.setdefault("_cache", {})
        if key not in cache:
            cache[key] = torch.tensor(self.seq_host[name], dtype=dtype, device=self.device)
        return cache[key]

    def offsets(self) -> list[int]:
        out = [0]
        for n in self.lengths:
            out.append(out[-1] + n)
        return out

    def subset(self, seq_ids: Sequence[int], truncate: int | None = None) -> tuple[Problem, torch.Tensor]:
        """The sub-batch of sequences ``seq_ids`` (each cut to its first ``truncate`` tokens if given)
        and the row index ``[T_sub]`` (int64, on the device) of its tokens in this problem."""
        offs = self.offsets()
        rows: list[torch.Tensor] = []
        lengths = []
        for s in seq_ids:
            n = self.lengths[s] if truncate is None else min(truncate, self.lengths[s])
            rows.append(torch.arange(offs[s], offs[s] + n, dtype=torch.int64))
            lengths.append(n)
        idx = torch.cat(rows) if rows else torch.zeros(0, dtype=torch.int64)
        idx = idx.to(self.device)
        tensors = {k: t.detach().index_select(0, idx) for k, t in self.tensors.items()}
        seq_host = {k: [v[s] for s in seq_ids] for k, v in self.seq_host.items()}
        if truncate is not None and "num_targets" in seq_host:
            seq_host["num_targets"] = [
                min(t, n) for t, n in zip(seq_host["num_targets"], lengths, strict=True)
            ]
        sub = dataclasses.replace(self, lengths=lengths, tensors=tensors, seq_host=seq_host)
        sub.__dict__.pop("_cache", None)
        return sub, idx

    def cast(self, dtype: torch.dtype) -> Problem:
        """The same problem with every floating tensor in ``dtype`` (the gold reference's copy)."""
        tensors = {k: t.detach().to(dtype) for k, t in self.tensors.items()}
        out = dataclasses.replace(self, tensors=tensors, dtype=dtype)
        out.__dict__.pop("_cache", None)
        return out

    def leaves(self) -> dict[str, torch.Tensor]:
        """Fresh leaf copies of the inputs; those in ``grad_names`` require grad."""
        return {k: t.detach().clone().requires_grad_(k in self.grad_names) for k, t in self.tensors.items()}


def _randn(shape: Sequence[int], gen: torch.Generator, device, dtype, scale: float = 1.0) -> torch.Tensor:
    # Drawn in fp32 on the CPU so a row's data is the same on every device.
    return (torch.randn(tuple(shape), generator=gen, dtype=torch.float32) * scale).to(
        device=device, dtype=dtype
    )


class Family:
    """Base: subclasses set ``name`` and ``check_tokens`` and implement the hooks."""

    name = ""
    #: default token budget of the reference in the correctness check on a GPU (per row)
    check_tokens = 8192
    #: what the rate column means for this family
    rate_unit = "TFLOP/s"

    def build(self, row: Row, device: torch.device, dtype: torch.dtype) -> Problem:
        raise NotImplementedError

    def call(self, p: Problem, t: dict[str, torch.Tensor], backend: str) -> torch.Tensor:
        """``jagattn.<function>(...)`` on tensors ``t`` (same names as ``p.tensors``); returns ``o``."""
        raise NotImplementedError

    def explain(self, p: Problem, backend: str):
        raise NotImplementedError

    def flops(self, p: Problem) -> dict[str, Any]:
        raise NotImplementedError

    def describe(self, p: Problem) -> str:
        raise NotImplementedError


class AttentionFamily(Family):
    name = "attention"
    check_tokens = 8192

    def build(self, row: Row, device, dtype) -> Problem:
        pr = row.params
        lengths = draw_lengths(*row.lengths, seed=row.seed)
        gen = torch.Generator().manual_seed(row.seed)
        t = sum(lengths)
        tensors = {
            "q": _randn((t, pr["hq"], pr["d"]), gen, device, dtype),
            "k": _randn((t, pr["hkv"], pr["d"]), gen, device, dtype),
            "v": _randn((t, pr["hkv"], pr["dv"]), gen, device, dtype),
        }
        return Problem(row, lengths, tensors, ("q", "k", "v"), {}, dict(pr), torch.device(device), dtype)

    def call(self, p: Problem, t: dict[str, torch.Tensor], backend: str) -> torch.Tensor:
        import jagattn

        mx = max(p.lengths, default=0)
        cu = p.cu_seqlens
        return jagattn.attention(
            t["q"], t["k"], t["v"], cu, cu, mx, mx,
            causal=p.params["causal"], window=tuple(p.params["window"]), backend=backend,
        )  # fmt: skip

    def explain(self, p: Problem, backend: str):
        import jagattn

        mx = max(p.lengths, default=0)
        cu = p.cu_seqlens
        t = p.tensors
        return jagattn.explain(
            "attention", t["q"], t["k"], t["v"], cu, cu, mx, mx,
            causal=p.params["causal"], window=tuple(p.params["window"]), backend=backend,
        )  # fmt: skip

    def flops(self, p: Problem) -> dict[str, Any]:
        pr = p.params
        pairs = _flops.attention_pairs(p.lengths, p.lengths, causal=pr["causal"], window=tuple(pr["window"]))
        out: dict[str, Any] = _flops.attention_flops(pairs, hq=pr["hq"], d=pr["d"], dv=pr["dv"])
        out["pairs"] = pairs
        out["convention"] = "fwd 2*(D+Dv)*Hq*P, bwd 2.5x fwd, P = exact visible pairs"
        return out

    def describe(self, p: Problem) -> str:
        pr = p.params
        mask = "causal" if pr["causal"] else "non-causal"
        left, right = pr["window"]
        if left >= 0 or (right >= 0 and not pr["causal"]):
            mask += f" window=({left},{right})"
        return f"{describe_lengths(p.lengths)} Hq={pr['hq']} Hkv={pr['hkv']} D={pr['d']} {mask}"


class HstuFamily(Family):
    name = "hstu"
    check_tokens = 16384

    def build(self, row: Row, device, dtype) -> Problem:
        pr = row.params
        lengths = draw_lengths(*row.lengths, seed=row.seed)
        rng = random.Random(row.seed + 1)
        lo, hi = pr["targets"]
        targets = [min(rng.randint(lo, hi), n) for n in lengths]
        gen = torch.Generator().manual_seed(row.seed)
        t = sum(lengths)
        tensors = {
            "q": _randn((t, pr["h"], pr["dq"]), gen, device, dtype),
            "k": _randn((t, pr["h"], pr["dq"]), gen, device, dtype),
            "v": _randn((t, pr["h"], pr["dv"]), gen, device, dtype),
        }
        return Problem(
            row,
            lengths,
            tensors,
            ("q", "k", "v"),
            {"num_targets": targets},
            dict(pr),
            torch.device(device),
            dtype,
        )

    def _kwargs(self, p: Problem) -> dict[str, Any]:
        pr = p.params
        return {
            "alpha": pr["alpha"],
            "num_targets": p.seq_tensor("num_targets", torch.int64),
            "contextual_seq_len": pr["contextual"],
            "max_attn_len": pr["window"],
        }

    def call(self, p: Problem, t: dict[str, torch.Tensor], backend: str) -> torch.Tensor:
        import jagattn

        return jagattn.hstu_attention(
            t["q"], t["k"], t["v"], p.cu_seqlens, p.params["max_seq_len"], backend=backend, **self._kwargs(p)
        )

    def explain(self, p: Problem, backend: str):
        import jagattn

        t = p.tensors
        return jagattn.explain(
            "hstu",
            t["q"],
            t["k"],
            t["v"],
            p.cu_seqlens,
            p.params["max_seq_len"],
            backend=backend,
            **self._kwargs(p),
        )

    def flops(self, p: Problem) -> dict[str, Any]:
        pr = p.params
        pairs = _flops.hstu_pairs(
            p.lengths, p.seq_host["num_targets"], contextual=pr["contextual"], window=pr["window"]
        )
        out: dict[str, Any] = _flops.hstu_flops(pairs["exact"], h=pr["h"], dq=pr["dq"], dv=pr["dv"])
        out["pairs"] = pairs["exact"]
        out["pairs_peer_convention"] = pairs["peer"]
        out["peer_convention"] = _flops.hstu_flops(pairs["peer"], h=pr["h"], dq=pr["dq"], dv=pr["dv"])
        out["convention"] = (
            "fwd 2*(Dq+Dv)*H*P, bwd 2*(3Dq+2Dv)*H*P, P = exact visible pairs "
            "(peer_convention: P = sum n^2/2, as generative-recommenders' benchmark)"
        )
        return out

    def describe(self, p: Problem) -> str:
        pr = p.params
        extra = ""
        if pr["contextual"]:
            extra += f" C={pr['contextual']}"
        if pr["window"]:
            extra += f" W={pr['window']}"
        lo, hi = pr["targets"]
        return (
            f"{describe_lengths(p.lengths)} H={pr['h']} D={pr['dq']} N={pr['max_seq_len']} "
            f"targets {lo}..{hi}{extra}"
        )


class GatedDeltaFamily(Family):
    name = "gated_delta"
    # The reference is a Python token loop (forward and autograd backward): ~2k tokens take seconds.
    check_tokens = 2048
    rate_unit = "Mtok/s"

    def build(self, row: Row, device, dtype) -> Problem:
        pr = row.params
        lengths = draw_lengths(*row.lengths, seed=row.seed)
        gen = torch.Generator().manual_seed(row.seed)
        t = sum(lengths)
        h, hv, k, v = pr["h"], pr["hv"], pr["k"], pr["v"]
        g = torch.nn.functional.logsigmoid(_randn((t, hv), gen, "cpu", torch.float32)).to(device)
        beta = torch.sigmoid(_randn((t, hv), gen, "cpu", torch.float32)).to(device=device, dtype=dtype)
        tensors = {
            "q": _randn((t, h, k), gen, device, dtype),
            "k": _randn((t, h, k), gen, device, dtype),
            "v": _randn((t, hv, v), gen, device, dtype),
            "g": g,
            "beta": beta,
        }
        names = ("q", "k", "v", "g", "beta")
        return Problem(row, lengths, tensors, names, {}, dict(pr), torch.device(device), dtype)

    def call(self, p: Problem, t: dict[str, torch.Tensor], backend: str) -> torch.Tensor:
        import jagattn

        o, _ = jagattn.gated_delta_rule(
            t["q"], t["k"], t["v"], t["g"], t["beta"],
            cu_seqlens=p.cu_seqlens, use_qk_l2norm=True, output_final_state=False, backend=backend,
        )  # fmt: skip
        return o

    def explain(self, p: Problem, backend: str):
        import jagattn

        t = p.tensors
        return jagattn.explain(
            "gated_delta", t["q"], t["k"], t["v"], t["g"], t["beta"],
            cu_seqlens=p.cu_seqlens, use_qk_l2norm=True, output_final_state=False, backend=backend,
        )  # fmt: skip

    def flops(self, p: Problem) -> dict[str, Any]:
        pr = p.params
        out: dict[str, Any] = _flops.gated_delta_flops(p.tokens, hv=pr["hv"], k=pr["k"], v=pr["v"])
        out["convention"] = "fwd (6KV+6CK+4CV) per token and value head, C=64; rates in Mtok/s"
        return out

    def describe(self, p: Problem) -> str:
        pr = p.params
        heads = f"H={pr['h']}" + (f" HV={pr['hv']}" if pr["hv"] != pr["h"] else "")
        return f"{describe_lengths(p.lengths)} {heads} K={pr['k']} V={pr['v']} l2norm"


FAMILIES: dict[str, Family] = {f.name: f for f in (AttentionFamily(), HstuFamily(), GatedDeltaFamily())}
