"""FLOP counts with the SPEC.md conventions, from the real sequence lengths.

``P`` is always the exact number of visible ``(i, j)`` pairs summed over sequences, counted with
the same mask rules as SPEC.md (sections 1 and 2). For HSTU the recommender peers' own
convention ``P = sum_b n_b^2 / 2`` is also returned, so a table can say which one it uses.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

GATED_DELTA_CHUNK = 64


def attention_pairs(
    lengths_q: Sequence[int], lengths_k: Sequence[int], *, causal: bool, window: tuple[int, int]
) -> int:
    """Visible pairs of softmax attention: bottom-right aligned mask, ``causal`` folds ``right = 0``."""
    left, right = window
    if causal:
        right = 0
    total = 0
    for lq, lk in zip(lengths_q, lengths_k, strict=True):
        if lq == 0 or lk == 0:
            continue
        i = torch.arange(lq, dtype=torch.int64)
        diag = i + (lk - lq)
        lo = (diag - left).clamp(min=0) if left >= 0 else torch.zeros_like(i)
        hi = (diag + right).clamp(max=lk - 1) if right >= 0 else torch.full_like(i, lk - 1)
        total += int((hi - lo + 1).clamp(min=0).sum())
    return total


def attention_flops(pairs: int, *, hq: int, d: int, dv: int) -> dict[str, float]:
    """SPEC section 1: forward ``2 (D + Dv) Hq P``, backward 2.5x forward."""
    fwd = 2.0 * (d + dv) * hq * pairs
    return {"fwd": fwd, "bwd": 2.5 * fwd, "fwdbwd": 3.5 * fwd}


def hstu_ids(n: int, num_targets: int | None, contextual: int) -> tuple[torch.Tensor, int]:
    """Position ids of one sequence (SPEC section 2) and ``M``, the id shared by all targets."""
    p = torch.arange(n, dtype=torch.int64)
    ids = p if contextual == 0 else (p - contextual + 1).clamp(min=0)
    u = n if num_targets is None else n - num_targets
    m = u - contextual + 1 if contextual > 0 else u
    if num_targets is not None:
        ids = torch.minimum(ids, torch.tensor(m))
    return ids, m


def hstu_pairs_one(
    n: int, num_targets: int | None, *, contextual: int = 0, window: int = 0, min_full: int = 0
) -> int:
    """Exact visible pairs of one HSTU sequence, ``O(n log n)``: ids are non-decreasing in position,
    so every row's visible keys are an id range (plus the diagonal, plus the contextual rule)."""
    if n == 0:
        return 0
    ids, m = hstu_ids(n, num_targets, contextual)

    def count_less(x: torch.Tensor) -> torch.Tensor:
        return torch.searchsorted(ids, x, side="left")

    cnt = count_less(ids) + 1  # keys with a smaller id, plus the diagonal
    if window > 0:
        windowed = torch.ones_like(ids, dtype=torch.bool)
        if min_full > 0:
            windowed = ids < m - min_full
        cnt = cnt - torch.where(windowed, count_less(ids - window), torch.zeros_like(ids))
    if contextual > 0:
        # Contextual rows (id 0) see every key with id < M, themselves included when 0 < M.
        ctx_cnt = count_less(torch.tensor([m])).expand_as(ids) + (1 if m <= 0 else 0)
        cnt = torch.where(ids == 0, ctx_cnt, cnt)
    return int(cnt.sum())


def hstu_mask_bruteforce(
    n: int, num_targets: int | None, *, contextual: int = 0, window: int = 0, min_full: int = 0
) -> torch.Tensor:
    """``[n, n]`` bool mask written straight from SPEC section 2 (for testing the fast counter)."""
    ids, m = hstu_ids(n, num_targets, contextual)
    pos = torch.arange(n)
    idi, idj = ids[:, None], ids[None, :]
    d = idi - idj
    valid = (pos[:, None] == pos[None, :]) | (d > 0)
    if window > 0:
        full = (idi >= m - min_full) if min_full > 0 else torch.zeros_like(d, dtype=torch.bool)
        valid = valid & ((d <= window) | full)
    if contextual > 0:
        valid = valid | ((idi == 0) & (idj < m))
    return valid


def hstu_pairs(
    lengths: Sequence[int],
    num_targets: Sequence[int] | None,
    *,
    contextual: int = 0,
    window: int = 0,
    min_full: int = 0,
) -> dict[str, int]:
    """``{"exact": P, "peer": sum n^2 // 2}`` (the second is the recommender benchmarks' convention)."""
    exact = 0
    cache: dict[tuple[int, int | None], int] = {}
    for b, n in enumerate(lengths):
        t = None if num_targets is None else int(num_targets[b])
        key = (n, t)
        if key not in cache:
            cache[key] = hstu_pairs_one(n, t, contextual=contextual, window=window, min_full=min_full)
        exact += cache[key]
    return {"exact": exact, "peer": sum(n * n // 2 for n in lengths)}


def hstu_flops(pairs: int, *, h: int, dq: int, dv: int) -> dict[str, float]:
    """SPEC section 2: forward ``2 (Dq + Dv) H P``, backward ``2 (3 Dq + 2 Dv) H P``."""
    fwd = 2.0 * (dq + dv) * h * pairs
    bwd = 2.0 * (3 * dq + 2 * dv) * h * pairs
    return {"fwd": fwd, "bwd": bwd, "fwdbwd": fwd + bwd}


def gated_delta_flops(
    tokens: int, *, hv: int, k: int, v: int, chunk: int = GATED_DELTA_CHUNK
) -> dict[str, float]:
    """SPEC section 3: forward ``(6KV + 6CK + 4CV)`` per token and value head (chunk C = 64).

    SPEC gives no backward convention: only ``fwd`` is returned; backward is reported in tokens/s.
    """
    return {"fwd": float(tokens * hv * (6 * k * v + 6 * chunk * k + 4 * chunk * v))}
