"""Shared by the tests and the benchmarks: random jagged batches, the tolerance rule, NaN poisoning.

The tolerance rule (SPEC.md section 5): compare against a "gold" reference computed in fp64
(CPU) or fp32; the backend's error (max-abs and RMS) must be at most twice the error of the
reference run in the input dtype, plus a floor of ``1e-5 * rms(gold)``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import random
from collections.abc import Iterator, Sequence

import torch

from ._core.varlen import cu_seqlens_from_lengths

LENGTH_KINDS = ("uniform", "skewed", "odd", "empties", "single", "ones")


def random_lengths(
    kind: str,
    *,
    batch: int = 4,
    max_len: int = 128,
    seed: int = 0,
) -> list[int]:
    """Sequence lengths of one of the standard shapes of jagged batch.

    - ``uniform``: ``batch`` lengths uniform in ``[max_len // 2, max_len]``.
    - ``skewed``: most sequences short (1..max_len//8), one or two of length ~max_len.
    - ``odd``: the block-boundary lengths 1, 63, 65 (clipped to ``max_len``) plus random ones.
    - ``empties``: random lengths with zero-length sequences at the start, middle and end.
    - ``single``: one sequence of length ``max_len``.
    - ``ones``: ``batch`` sequences of length 1.
    """
    rng = random.Random(seed)
    if kind == "uniform":
        return [rng.randint(max(1, max_len // 2), max_len) for _ in range(batch)]
    if kind == "skewed":
        n_long = max(1, batch // 8)
        out = [rng.randint(1, max(1, max_len // 8)) for _ in range(batch - n_long)]
        out += [rng.randint(max(1, (3 * max_len) // 4), max_len) for _ in range(n_long)]
        rng.shuffle(out)
        return out
    if kind == "odd":
        base = [min(n, max_len) for n in (1, 63, 65)]
        return base + [rng.randint(1, max_len) for _ in range(max(0, batch - 3))]
    if kind == "empties":
        mid = [rng.randint(1, max_len) for _ in range(max(1, batch - 3))]
        return [0] + mid[: len(mid) // 2] + [0] + mid[len(mid) // 2 :] + [0]
    if kind == "single":
        return [max_len]
    if kind == "ones":
        return [1] * batch
    raise ValueError(f"kind: unknown length kind {kind!r}; choose from {LENGTH_KINDS}")


def cu_seqlens(lengths: Sequence[int], device: torch.device | str = "cpu", dtype=torch.int32) -> torch.Tensor:
    return cu_seqlens_from_lengths(lengths, device=device, dtype=dtype)


def randn(
    shape: Sequence[int],
    *,
    dtype: torch.dtype = torch.float32,
    device: torch.device | str = "cpu",
    generator: torch.Generator | None = None,
    scale: float = 1.0,
    requires_grad: bool = False,
) -> torch.Tensor:
    """Normal random tensor (made in fp32 on CPU for reproducibility across devices, then moved)."""
    t = torch.randn(tuple(shape), generator=generator, dtype=torch.float32) * scale
    t = t.to(device=device, dtype=dtype)
    return t.requires_grad_(requires_grad)


def rand(
    shape: Sequence[int],
    *,
    dtype: torch.dtype = torch.float32,
    device: torch.device | str = "cpu",
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """Uniform [0, 1) random tensor (made in fp32 on CPU like ``randn``, then moved: a CPU generator serves any
    device)."""
    return torch.rand(tuple(shape), generator=generator, dtype=torch.float32).to(device=device, dtype=dtype)


def generator(seed: int) -> torch.Generator:
    g = torch.Generator()
    g.manual_seed(seed)
    return g


# ---------------------------------------------------------------------------------------------
# the tolerance rule


@dataclasses.dataclass(frozen=True)
class Errors:
    max_abs: float
    rms: float

    def __str__(self) -> str:
        return f"max_abs={self.max_abs:.3e} rms={self.rms:.3e}"


def errors(out: torch.Tensor, gold: torch.Tensor) -> Errors:
    """Max-abs and RMS of ``out - gold`` in fp64; NaN/inf mismatches give ``inf``."""
    a = out.detach().to("cpu", torch.float64)
    b = gold.detach().to("cpu", torch.float64)
    if a.shape != b.shape:
        raise AssertionError(f"shape mismatch: {tuple(a.shape)} vs gold {tuple(b.shape)}")
    if a.numel() == 0:
        return Errors(0.0, 0.0)
    # -inf == -inf (e.g. lse of a row with no visible key) counts as exact.
    same_inf = torch.isinf(a) & torch.isinf(b) & (torch.sign(a) == torch.sign(b))
    diff = torch.where(same_inf, torch.zeros_like(a), a - b)
    if not torch.isfinite(diff).all():
        return Errors(float("inf"), float("inf"))
    diff = diff.abs()
    return Errors(float(diff.max()), float(diff.pow(2).mean().sqrt()))


def rms(t: torch.Tensor) -> float:
    x = t.detach().to("cpu", torch.float64)
    x = x[torch.isfinite(x)]
    return float(x.pow(2).mean().sqrt()) if x.numel() else 0.0


def check_close(
    name: str,
    out: torch.Tensor,
    gold: torch.Tensor,
    lowp: torch.Tensor,
    *,
    factor: float = 2.0,
    floor_rel: float = 1e-5,
) -> Errors:
    """Assert the SPEC section 5 rule; returns the backend's errors. Message names ``name``."""
    err = errors(out, gold)
    ref_err = errors(lowp, gold)
    floor = floor_rel * rms(gold)
    ok_max = err.max_abs <= factor * ref_err.max_abs + floor
    ok_rms = err.rms <= factor * ref_err.rms + floor
    if not (ok_max and ok_rms):
        raise AssertionError(
            f"{name}: backend error {err} exceeds {factor}x the input-dtype reference error {ref_err} "
            f"+ floor {floor:.3e} (gold rms {rms(gold):.3e})"
        )
    return err


def assert_finite_where(name: str, t: torch.Tensor) -> None:
    """Fail on any NaN (a poisoned element the kernel never wrote shows up here)."""
    if torch.isnan(t).any():
        n = int(torch.isnan(t).sum())
        raise AssertionError(f"{name}: {n} NaN elements of {t.numel()} (unwritten output or NaN gradient)")


# ---------------------------------------------------------------------------------------------
# NaN poisoning


@contextlib.contextmanager
def poisoned_outputs(enabled: bool = True) -> Iterator[None]:
    """Inside the block, kernel launchers fill their outputs with NaN before the kernel runs."""
    old = os.environ.get("JAGATTN_POISON")
    os.environ["JAGATTN_POISON"] = "1" if enabled else "0"
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("JAGATTN_POISON", None)
        else:
            os.environ["JAGATTN_POISON"] = old


def poison_one_sequence(
    tensors: Sequence[torch.Tensor], lengths: Sequence[int], index: int, cells: Sequence[tuple[int, float]]
) -> tuple[list[torch.Tensor], torch.Tensor]:
    """Copies of the packed ``tensors`` (sequences along dim 0, lengths ``lengths``) in which sequence ``index`` holds a
    non-finite value: for the i-th tensor, ``cells[i] = (row, value)`` sets element ``[row, 0, ...]`` (the first head,
    every trailing index at 0; ``row`` counts from the sequence's start) to ``value``. Also returns the boolean mask of
    the rows of every other sequence: what an isolation test compares bit for bit against a finite run."""
    start = sum(lengths[:index])
    out = []
    for t, (row, value) in zip(tensors, cells, strict=True):
        c = t.detach().clone()
        c[(start + row, 0) + (0,) * (c.dim() - 2)] = value
        out.append(c)
    keep = torch.ones(sum(lengths), dtype=torch.bool, device=tensors[0].device)
    keep[start : start + lengths[index]] = False
    return out, keep


def assert_isolated(
    clean: Sequence[torch.Tensor],
    poisoned: Sequence[torch.Tensor],
    names: Sequence[str],
    keep: torch.Tensor,
    probe: str,
    context=None,
    masks: dict[str, torch.Tensor] | None = None,
) -> None:
    """The isolation check after ``poison_one_sequence``: ``clean`` and ``poisoned`` are one op's outputs / gradients
    (named ``names``) from the finite batch and from the poisoned one. Output ``probe`` must differ on the poisoned
    sequence's rows (the poison took); every output must be finite and bit for bit equal on the rows of ``keep`` (or
    on ``masks[name]`` for outputs indexed otherwise, e.g. per-sequence states)."""
    masks = masks or {}
    i = list(names).index(probe)
    assert not torch.equal(clean[i][~keep], poisoned[i][~keep]), ("the poison did not reach", probe, context)
    for name, a, b in zip(names, clean, poisoned, strict=True):
        sel = masks.get(name, keep)
        assert torch.isfinite(a[sel]).all(), (context, name)
        assert torch.equal(a[sel], b[sel]), (context, name)


class OnCuda:
    """A CPU tensor as the TMA / Gluon guards see a CUDA one (its layout, element size and address), for testing
    those guards on machines without a GPU."""

    is_cuda = True

    def __init__(self, t: torch.Tensor):
        self.t, self.shape = t, t.shape

    def __getattr__(self, name):
        return getattr(self.t, name)
