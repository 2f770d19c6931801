"""Compact work lists for batches of uneven lengths (the ``recsys`` case); opt-in, see ``ENABLED``.

The dense grid launches ``cdiv(max_seq_len, BLOCK) * B * H`` programs, and every block past a
sequence's end exits at once. On a heavy-tailed batch (median length ``N / 8``) that is ~80% of
the programs, and each still takes a slot on an SM (the kernels' registers allow one or two
programs per SM). The compact list launches ``cdiv(L, BLOCK) + B`` programs per head instead:

- ``order``: sequence indices sorted by length, longest first;
- per block size ``BLOCK`` in ``SIZES``, with ``J = cdiv(max_seq_len, BLOCK)`` and
  ``nb_b = min(cdiv(n_b, BLOCK), J)`` blocks for sequence ``b``, two prefix tables of ``J + 1`` entries:
  ``desc[i] = sum_b max(nb_b - (J - i), 0)`` (block index ``J - 1 - i`` of every sequence that has it,
  heaviest query blocks first: the forward) and ``asc[i] = sum_b min(nb_b, i)`` (block index ``i``,
  lightest-index key blocks first: the backward). Group ``i`` holds the ``c_i`` longest sequences,
  i.e. ``order[0:c_i]``.

A program ``g`` finds its group ``i`` with ``E[i] <= g < E[i + 1]`` by binary search and takes
sequence ``order[g - E[i]]``. Every kernel that reads the tables computes the section offsets from
``max_seq_len`` the same way (``_section``).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from ..._core.env import env_flag, env_positive_int
from ..._core.launch import launch

SIZES = (16, 32, 64, 128)
# Opt-in (``JAGATTN_HSTU_COMPACT=1``): on the H200 (Triton 3.6) the compact list was slower than the
# dense grid on the recsys row (B=128 N=2048, L=49854: forward 0.194 vs 0.170 ms, forward+backward with
# atomic dQ 1.255 vs 0.869 ms), so the dense grid stays the default.
ENABLED = env_flag("JAGATTN_HSTU_COMPACT", False)


def heavy_tailed(total_rows, batch: int, max_rows: int) -> bool:
    """At most half of the dense grid's rows are real (``2 * total_rows < batch * max_rows``, host ints, known
    without a sync); a symbolic ``total_rows`` (torch.compile) counts as dense, without a guard."""
    return isinstance(total_rows, int) and 2 * total_rows < batch * max_rows


def use_compact(total_rows: int, batch: int, max_seq_len: int) -> bool:
    """Compact list when at most half of the dense grid's blocks hold rows (known without a sync)."""
    return ENABLED and batch > 1 and heavy_tailed(total_rows, batch, max_seq_len)


# Dense grid order (every kernel): the blocks of L2_GROUP (sequence, head) pairs run one after the other,
# heaviest block first (``_grouped``). Before session 18 the grid ran the heaviest block of every pair in the
# batch, then the next block of every pair (L2_GROUP = B * H), so each pair's K/V (forward, dQ) or Q/dO (dK/dV)
# came from DRAM once per block: on the H100 the B256-N1024 forward read ~2.9 GB at 86% of DRAM bandwidth with
# a 9% L2 hit rate (session 17 ncu) for 0.5 GB of K/V. With runs of one pair: 41% of DRAM bandwidth, 62% L2
# hits, forward 1.010 -> 0.762 ms, backward 2.611 -> 2.346 (session 18, H100, benchmarks/hstu_l2_group_ab.py).
# Heavy-tailed batches (the recsys row: most pairs short, a few long) keep more pairs per run, which spreads
# the few heavy blocks over the grid instead of leaving one long pair's blocks for the end: by kernel time,
# runs of 32 sequences (128 pairs at H = 4) 0.171 / 0.539 ms fwd / bwd, one pair 0.194 / 0.567, the old
# order 0.184 / 0.560 (session 18 round 2). ``JAGATTN_HSTU_L2_GROUP=<n>`` overrides both.
L2_GROUP_SEQS_HEAVY_TAIL = 32


def l2_group(batch: int, heads: int, total_rows, max_rows: int) -> int:
    """How many (sequence, head) pairs share one run of the dense grid (see ``_grouped``), in
    ``[1, batch * heads]``: one for dense batches, ``L2_GROUP_SEQS_HEAVY_TAIL`` sequences' pairs when at most
    half of the dense grid holds rows (``2 * total_rows < batch * max_rows``, host ints; a symbolic
    ``total_rows`` under torch.compile counts as dense, a symbolic batch gives one). ``JAGATTN_HSTU_L2_GROUP``
    overrides."""
    pairs = batch * heads
    if not isinstance(pairs, int):  # symbolic batch (torch.compile, dynamic shapes): no guard, one pair
        return 1
    g = env_positive_int("JAGATTN_HSTU_L2_GROUP", None)
    if g is None:
        g = L2_GROUP_SEQS_HEAVY_TAIL * heads if heavy_tailed(total_rows, batch, max_rows) else 1
    # at most every pair: GROUP * nblocks then never exceeds the grid size (int32 in the kernel)
    return max(1, min(g, pairs))


@triton.jit
def _grouped(pid, nblocks, BH, GROUP):
    """``(pair, k)`` of program ``pid`` in the dense grid of ``nblocks * BH`` programs: the pairs (sequence,
    head; ``pair = b * H + h``) come in runs of ``GROUP`` (the last run may be shorter), and inside a run
    the ``k``-th block of every pair before the ``k + 1``-th (``k = 0``: the block the caller treats as
    heaviest). ``GROUP == BH``: ``pair = pid % BH``, ``k = pid // BH``."""
    per_run = GROUP * nblocks
    run = pid // per_run
    local = pid - run * per_run
    size = tl.minimum(GROUP, BH - run * GROUP)
    k = local // size
    pair = run * GROUP + (local - k * size)
    return pair, k


def table_len(max_seq_len: int) -> int:
    return sum(2 * (triton.cdiv(max_seq_len, s) + 1) for s in SIZES)


@triton.jit
def _section(MAX_ROWS, BLOCK: tl.constexpr):
    """Offset of ``BLOCK``'s tables (``desc`` then ``asc``) and its ``J``."""
    tl.static_assert((BLOCK == 16) | (BLOCK == 32) | (BLOCK == 64) | (BLOCK == 128))
    base = MAX_ROWS * 0
    if BLOCK > 16:
        base += 2 * (tl.cdiv(MAX_ROWS, 16) + 1)
    if BLOCK > 32:
        base += 2 * (tl.cdiv(MAX_ROWS, 32) + 1)
    if BLOCK > 64:
        base += 2 * (tl.cdiv(MAX_ROWS, 64) + 1)
    return base, tl.cdiv(MAX_ROWS, BLOCK)


@triton.jit
def _find(TABLE, ORDER, g, MAX_ROWS, BLOCK: tl.constexpr, ASCENDING: tl.constexpr):
    """``(b, j, valid)``: sequence and block index of program ``g`` in the compact list."""
    base, J = _section(MAX_ROWS, BLOCK)
    if ASCENDING:
        base += J + 1
    E = TABLE + base
    total = tl.load(E + J)
    lo = J * 0
    hi = J
    while hi - lo > 1:
        mid = (lo + hi) // 2
        go = tl.load(E + mid) <= g
        lo = tl.where(go, mid, lo)
        hi = tl.where(go, hi, mid)
    valid = g < total
    k = tl.where(valid, g - tl.load(E + lo), 0)
    b = tl.load(ORDER + k).to(tl.int32)
    if ASCENDING:
        j = lo
    else:
        j = J - 1 - lo
    return b, j, valid


@triton.jit
def _hstu_schedule_kernel(
    SEQ_OFFSETS,
    TABLE,
    B,
    MAX_ROWS,
    BLOCK_I: tl.constexpr,
    BLOCK_B: tl.constexpr,
):
    s = tl.program_id(0)
    i = tl.program_id(1) * BLOCK_I + tl.arange(0, BLOCK_I)
    for t in tl.static_range(4):
        if s == t:
            BLOCK: tl.constexpr = 16 << t
            base, J = _section(MAX_ROWS, BLOCK)
            m_i = i <= J
            desc = tl.zeros([BLOCK_I], dtype=tl.int32)
            asc = tl.zeros([BLOCK_I], dtype=tl.int32)
            for b0 in range(0, B, BLOCK_B):
                o_b = b0 + tl.arange(0, BLOCK_B)
                m_b = o_b < B
                n = tl.load(SEQ_OFFSETS + o_b + 1, mask=m_b, other=0) - tl.load(
                    SEQ_OFFSETS + o_b, mask=m_b, other=0
                )
                nb = tl.minimum(tl.cdiv(n.to(tl.int32), BLOCK), J)
                desc += tl.sum(tl.maximum(nb[None, :] - (J - i)[:, None], 0), axis=1)
                asc += tl.sum(tl.minimum(nb[None, :], i[:, None]), axis=1)
            tl.store(TABLE + base + i, desc, mask=m_i)
            tl.store(TABLE + base + J + 1 + i, asc, mask=m_i)


def make_schedule(seq_offsets: torch.Tensor, max_seq_len: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``(order [B] int64, table int32)`` for the compact grid (see the module docstring)."""
    batch = seq_offsets.shape[0] - 1
    lens = seq_offsets[1:] - seq_offsets[:-1]
    order = torch.argsort(lens, descending=True)
    table = torch.empty(table_len(max_seq_len), dtype=torch.int32, device=seq_offsets.device)
    block_i = 128
    grid = (len(SIZES), triton.cdiv(triton.cdiv(max_seq_len, SIZES[0]) + 1, block_i))
    launch(_hstu_schedule_kernel, grid, seq_offsets, table, batch, max_seq_len, BLOCK_I=block_i, BLOCK_B=64)
    return order, table
