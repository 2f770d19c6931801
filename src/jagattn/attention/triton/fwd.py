"""Forward kernel of varlen softmax attention (SPEC.md section 1) and its launcher.

One program computes ``BLOCK_M`` query rows of one sequence for one query head: online softmax
in base 2 (``scale * log2(e)`` folded into the scores, ``exp2``), fp32 accumulators, GQA by
reading kv head ``h // group`` in place. The key range of a tile is split into masked edge
blocks and an unmasked middle (``common._block_ranges``); key blocks outside the causal/window
band are never visited. Grid: ``(Tq // BLOCK_M + B, Hq)`` with the varlen schedule of
``common`` (no max_seqlen, no sync), slots walked in reverse so that the heaviest causal tiles
(the last query blocks of each sequence) start first; with HEAD_FAST one axis of
``(Tq // BLOCK_M + B) * Hq`` programs, the heads fastest. ``fwd_schedule`` picks the first-listed
tile and the grid order from host ints (see there and the family README).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from ..._core.alloc import new_empty
from ..._core.env import env_choice
from ..._core.launch import launch
from ..._core.tma import tma_loads_ok
from ..._core.triton_utils import configs
from .common import (
    LOG2E,
    SMEM_LIMIT,
    _block_ranges,
    _kv_bases,
    _load_tile,
    _tanh,
    fitting_configs,
    num_slots,
)

# (BLOCK_M, BLOCK_N, warps, stages), in list order (see _fwd_configs)
FWD_GPU_TILES = (
    (128, 64, 8, 3),
    (128, 64, 8, 4),
    (128, 64, 8, 2),  # the first that fits for head dims above 128
    (64, 64, 4, 3),
    (64, 64, 4, 2),
    (128, 128, 8, 3),
    (64, 32, 4, 2),  # the last resort (the prune keeps the last config if none fits): fp32 at D = 256
)


def _fwd_configs() -> list[triton.Config]:
    # measured on an H200 (Triton 3.6, D=128, bf16): 128x64/8 warps wins on long keys (mean 8192,
    # skewed) with the session-5 kernel, 64x64/4 warps/3 stages (two programs per SM) below 4096 keys:
    # fwd_schedule moves it first there (KEYS_CLASS 1). 128x128/8 warps/3 stages lost in session 5 (255
    # registers); with the session-11 kernel it wins where a query row sees >= 2048 keys on average
    # (KEYS_CLASS 2, session 14). Lost on every row: 256x64 on 8 warps (2-3 stages, 10-33%), 128x128 at
    # 2 stages, 128x32 capped at 128 registers (two programs per SM), a lazy rescale (skip acc *= alpha
    # unless a row max grows by 2^8; it needs a block-wide max and a branch per step), one loop per mask
    # phase (16-18%), TMA descriptor loads of K/V (0-2%, see the README).
    gpu = [
        triton.Config({"BLOCK_M": bm, "BLOCK_N": bn}, num_warps=w, num_stages=s)
        for bm, bn, w, s in FWD_GPU_TILES
    ]
    return configs(gpu, triton.Config({"BLOCK_M": 32, "BLOCK_N": 16}, num_warps=4, num_stages=1))


def _itemsize(named_args) -> int:
    """Bytes per element of q (2 when the launcher passed no tensor, e.g. in unit tests of the prune)."""
    q = named_args.get("Q")
    return q.element_size() if hasattr(q, "element_size") else 2


def _prune_fwd(configs, named_args, **kwargs):
    """Drop tiles whose pipelined K/V buffers cannot fit in shared memory for this head dim and dtype;
    put the tile of the launch's ``KEYS_CLASS`` first (1: short keys, at head dims <= 128; 2: wide, at
    head dims of exactly 128, where it was measured; 2-byte dtypes only: the short tile's 64 x Dv
    accumulator takes 128 registers per thread at 128; larger head dims and fp32 keep the list order)."""
    bd, bdv = named_args["BLOCK_D"], named_args["BLOCK_DV"]
    size = _itemsize(named_args)

    def fits(c):
        bm, bn = c.kwargs["BLOCK_M"], c.kwargs["BLOCK_N"]
        smem = size * (c.num_stages * bn * (bd + bdv) + bm * bd)  # K/V ring + q
        return smem <= SMEM_LIMIT and bm * bdv // (32 * c.num_warps) <= 128

    first = {1: SHORT_KEYS_TILE, 2: WIDE_KEYS_TILE}.get(named_args.get("KEYS_CLASS"))
    if first == WIDE_KEYS_TILE and (bd, bdv) != (128, 128):
        # fwd_schedule classes only head dim 128 as wide; this covers JAGATTN_ATTN_FWD_TILE=wide elsewhere
        first = None
    if first is not None and max(bd, bdv) <= 128 and size == 2:
        configs = [c for c in configs if _tile(c) == first] + [c for c in configs if _tile(c) != first]
    return fitting_configs(configs, fits)


def _tile(c) -> tuple[int, int, int, int]:
    return c.kwargs["BLOCK_M"], c.kwargs["BLOCK_N"], c.num_warps, c.num_stages


@triton.jit
def _fwd_scores(
    q, p_k0, n0, lk, o_n0, o_d, qk_scale, softcap_in, softcap_out, stride_kt,
    D: tl.constexpr, BLOCK_D: tl.constexpr, HAS_SOFTCAP: tl.constexpr, FOLD_SCALE: tl.constexpr,
    DOT_PREC: tl.constexpr, TMA: tl.constexpr,
):  # fmt: skip
    """Scores of key block ``n0`` ([BLOCK_M, BLOCK_N], log2 domain unless FOLD_SCALE defers the scale);
    key rows at or past ``lk`` read as zeros (``TMA``: ``p_k0`` is the sequence's descriptor, whose row
    bound zero-fills them)."""
    if TMA:
        b_k = p_k0.load([n0, 0])
    else:
        m_n = n0 + o_n0 < lk
        b_k = _load_tile(p_k0 + n0.to(tl.int64) * stride_kt, m_n, o_d < D, True, BLOCK_D != D)
    s = tl.dot(q, tl.trans(b_k), input_precision=DOT_PREC)
    if HAS_SOFTCAP:
        s = softcap_out * _tanh(s * softcap_in)
    elif not FOLD_SCALE:
        s = s * qk_scale
    return s


@triton.jit
def _fwd_update(
    acc, l_i, m_i, s, p_v0, n0, masked, o_m, lk, diag, window_left, window_right, qk_scale, stride_vt,
    o_n0, o_dv, DV: tl.constexpr, BLOCK_DV: tl.constexpr, HAS_LEFT: tl.constexpr, HAS_RIGHT: tl.constexpr,
    FOLD_SCALE: tl.constexpr, DOT_PREC: tl.constexpr, TMA: tl.constexpr,
):  # fmt: skip
    """One online-softmax step over the scores ``s`` of key block ``n0``; ``masked`` (a run-time flag,
    or a constexpr) applies the element mask."""
    o_n = n0 + o_n0
    m_n = o_n < lk
    if masked:
        vis = m_n[None, :]
        if HAS_LEFT:
            vis = vis & (o_n[None, :] >= o_m[:, None] + (diag - window_left))
        if HAS_RIGHT:
            vis = vis & (o_n[None, :] <= o_m[:, None] + (diag + window_right))
        s = tl.where(vis, s, float("-inf"))
    if FOLD_SCALE:
        # qk_scale > 0: max commutes with the scale, and exp2's argument is one FMA per score
        m_new = tl.maximum(m_i, tl.max(s, 1) * qk_scale)
    else:
        m_new = tl.maximum(m_i, tl.max(s, 1))
    # a row with no visible key so far keeps m = -inf; shift by 0 so exp2 gives 0, not NaN
    m_use = tl.where(m_new == float("-inf"), 0.0, m_new)
    alpha = tl.math.exp2(m_i - m_use)
    l_i = l_i * alpha
    acc = acc * alpha[:, None]
    if FOLD_SCALE:
        p = tl.math.exp2(s * qk_scale - m_use[:, None])
    else:
        p = tl.math.exp2(s - m_use[:, None])
    l_i = l_i + tl.sum(p, 1)
    # [BLOCK_N, BLOCK_DV]
    if TMA:
        b_v = p_v0.load([n0, 0])
    else:
        b_v = _load_tile(p_v0 + n0.to(tl.int64) * stride_vt, m_n, o_dv < DV, True, BLOCK_DV != DV)
    acc = tl.dot(p.to(b_v.dtype), b_v, acc, input_precision=DOT_PREC)
    return acc, l_i, m_new


@triton.autotune(
    configs=_fwd_configs(),
    key=[
        "D",
        "DV",
        "HAS_LEFT",
        "HAS_RIGHT",
        "HAS_SOFTCAP",
        "FOLD_SCALE",
        "SEQ_BUCKET",
        "KEYS_CLASS",
        "HEAD_FAST",
        "TMA",
    ],
    prune_configs_by={"early_config_prune": _prune_fwd},
)
@triton.jit(do_not_specialize=["B", "GROUP", "window_left", "window_right", "SEQ_BUCKET", "KEYS_CLASS", "HQ"])
def _attention_fwd_kernel(
    Q,
    K,
    V,
    O,
    LSE,
    CU_Q,
    CU_K,
    stride_qt,
    stride_qh,
    stride_kt,
    stride_kh,
    stride_vt,
    stride_vh,
    stride_ot,
    stride_oh,
    stride_lse_h,
    B,
    GROUP,
    window_left,
    window_right,
    qk_scale,
    softcap_in,
    softcap_out,
    SEQ_BUCKET,
    KEYS_CLASS,
    HQ,
    D: tl.constexpr,
    DV: tl.constexpr,
    BLOCK_D: tl.constexpr,
    BLOCK_DV: tl.constexpr,
    HAS_LEFT: tl.constexpr,
    HAS_RIGHT: tl.constexpr,
    HAS_SOFTCAP: tl.constexpr,
    FOLD_SCALE: tl.constexpr,
    DOT_PREC: tl.constexpr,
    HEAD_FAST: tl.constexpr,
    TMA: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    # Inductor passes Python floats as fp64 scalars; fp64 would promote the scores and acc
    qk_scale = tl.cast(qk_scale, tl.float32)
    softcap_in = tl.cast(softcap_in, tl.float32)
    softcap_out = tl.cast(softcap_out, tl.float32)
    if HEAD_FAST:
        # one grid axis, the heads fastest: every head's heaviest block starts before any lighter one
        pid = tl.program_id(0)
        i_h = pid % HQ
        i_slot = tl.num_programs(0) // HQ - 1 - pid // HQ
    else:
        i_slot = tl.num_programs(0) - 1 - tl.program_id(0)
        i_h = tl.program_id(1)
    # the sequence owning this slot: binary search over CU_Q (inlined, see common.py for why)
    i_b = i_slot * 0
    hi_b = i_b + B
    while hi_b - i_b > 1:
        mid = (i_b + hi_b) // 2
        go_right = tl.load(CU_Q + mid).to(tl.int32) // BLOCK_M + mid <= i_slot
        i_b = tl.where(go_right, mid, i_b)
        hi_b = tl.where(go_right, hi_b, mid)
    bos_q = tl.load(CU_Q + i_b).to(tl.int32)
    i_m = i_slot - (bos_q // BLOCK_M + i_b)
    lq = tl.load(CU_Q + i_b + 1).to(tl.int32) - bos_q
    m0 = i_m * BLOCK_M
    if m0 >= lq:
        return
    bos_k = tl.load(CU_K + i_b).to(tl.int32)
    lk = tl.load(CU_K + i_b + 1).to(tl.int32) - bos_k
    i_hk = i_h // GROUP
    diag = lk - lq  # bottom-right alignment: query i sits at key position i + diag

    o_m = m0 + tl.arange(0, BLOCK_M)
    o_d = tl.arange(0, BLOCK_D)
    o_dv = tl.arange(0, BLOCK_DV)
    m_m = o_m < lq
    o_n0 = tl.arange(0, BLOCK_N)

    p_q = Q + (bos_q + o_m).to(tl.int64)[:, None] * stride_qt + i_h * stride_qh + o_d[None, :]
    b_q = _load_tile(p_q, m_m, o_d < D, True, BLOCK_D != D)
    # K/V of the sequence and kv head (TMA descriptors: session 19 forward, session 20 dQ)
    p_k0, p_v0 = _kv_bases(
        K, V, bos_k, lk, i_hk, stride_kt, stride_kh, stride_vt, stride_vh, D, DV, BLOCK_N, BLOCK_D, BLOCK_DV, TMA
    )  # fmt: skip

    # keys any row of the tile can see: [lo, hi); keys every row sees: [full_lo, full_hi)
    m_last = tl.minimum(m0 + BLOCK_M, lq) - 1
    lo = m0 * 0
    full_lo = lo
    hi = lk
    full_hi = lk
    if HAS_LEFT:
        lo = tl.maximum(m0 + diag - window_left, 0)
        full_lo = tl.maximum(m_last + diag - window_left, 0)
    if HAS_RIGHT:
        hi = tl.minimum(m_last + diag + window_right + 1, lk)
        full_hi = tl.minimum(m0 + diag + window_right + 1, lk)
    n_start, n_a, n_b, n_stop = _block_ranges(lo, hi, full_lo, full_hi, BLOCK_N)

    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, BLOCK_DV], dtype=tl.float32)
    # one loop with a run-time branch for the edge blocks: every software-pipelined loop copy
    # keeps its own buffers and addresses live (three of them spilled in session 1)
    for n0 in range(n_start, n_stop, BLOCK_N):
        n0 = tl.multiple_of(n0, BLOCK_N)
        s = _fwd_scores(
            b_q, p_k0, n0, lk, o_n0, o_d, qk_scale, softcap_in, softcap_out, stride_kt,
            D, BLOCK_D, HAS_SOFTCAP, FOLD_SCALE, DOT_PREC, TMA,
        )  # fmt: skip
        acc, l_i, m_i = _fwd_update(
            acc, l_i, m_i, s, p_v0, n0, (n0 < n_a) | (n0 >= n_b), o_m, lk, diag, window_left,
            window_right, qk_scale, stride_vt, o_n0, o_dv, DV, BLOCK_DV, HAS_LEFT, HAS_RIGHT,
            FOLD_SCALE, DOT_PREC, TMA,
        )  # fmt: skip

    # rows with no visible key: l = 0 -> output 0, lse = -inf
    has_key = l_i > 0.0
    l_safe = tl.where(has_key, l_i, 1.0)
    b_o = acc / l_safe[:, None]
    b_lse = tl.where(has_key, (m_i + tl.math.log2(l_safe)) * 0.6931471805599453, float("-inf"))
    p_o = O + (bos_q + o_m).to(tl.int64)[:, None] * stride_ot + i_h * stride_oh + o_dv[None, :]
    tl.store(p_o, b_o.to(O.dtype.element_ty), mask=m_m[:, None] & (o_dv < DV)[None, :])
    tl.store(LSE + i_h.to(tl.int64) * stride_lse_h + bos_q + o_m, b_lse, mask=m_m)


# ---------------------------------------------------------------------------------------------
# launcher


def head_block(d: int) -> int:
    """Register/smem tile width of a head dim: next power of two, at least 16 (tl.dot's minimum)."""
    return max(16, triton.next_power_of_2(d))


def seq_bucket(max_seqlen_q, max_seqlen_k) -> int:
    """Autotune bucket of the sequence lengths (log2 of the longest); 0 when symbolic."""
    if isinstance(max_seqlen_q, int) and isinstance(max_seqlen_k, int):
        return min(max(max_seqlen_q, max_seqlen_k, 1).bit_length(), 16)
    return 0


def dot_precision(dtype: torch.dtype) -> str:
    """fp32 inputs run in IEEE fp32 (exact contract); fp16/bf16 use the tensor cores."""
    return "ieee" if dtype == torch.float32 else "tf32"


# Window sides reach the kernels as int32 and are added to int32 positions: a side above this bounds
# nothing for any sequence under 2**30 tokens, and capping it keeps position + side below 2**31 (a
# side near 2**31 - 1, a common "unbounded" value, overflowed before). ``make_inputs`` already turns
# such sides into -1 for concrete shapes; this covers symbolic ones (torch.compile / export).
WINDOW_CAP = 1 << 30


def window_args(window_left: int, window_right: int) -> tuple[bool, bool, int, int]:
    has_left, has_right = window_left >= 0, window_right >= 0
    return has_left, has_right, min(max(window_left, 0), WINDOW_CAP), min(max(window_right, 0), WINDOW_CAP)


def softcap_args(scale: float, softcap: float) -> tuple[bool, float, float, float]:
    """(HAS_SOFTCAP, qk_scale, softcap_in, softcap_out) for scores in the log2 domain."""
    if softcap > 0:
        return True, scale * LOG2E, scale / softcap, softcap * LOG2E
    return False, scale * LOG2E, 1.0, 1.0


# the forward schedule by shape (``fwd_schedule``), from two H200 rounds (Triton 3.6, bf16, D=128,
# benchmarks/results/2026-11-21-s5-h200-attention-fwd-round{1,2}.json): the short tile won at max
# lengths up to 3019 (2.5-7%) and lost at 3584 (2-3%, equal lengths) and above; the bound sits between.
# The wide tile: session 14 rounds 3-4 (benchmarks/results/2026-11-22-s14-h200-round{3,4}), see fwd_schedule.
SHORT_KEYS_TILE = (64, 64, 4, 3)
SHORT_KEYS_MAX = 3072
WIDE_KEYS_TILE = (128, 128, 8, 3)
WIDE_SPAN_MIN = 2048
KEYS_LONG, KEYS_SHORT, KEYS_WIDE = 0, 1, 2


# for measurements, read once at import (like the autotune switch): JAGATTN_ATTN_FWD_TILE=short|long|wide,
# JAGATTN_ATTN_FWD_HEAD_FAST=0|1
FWD_TILE_OVERRIDE = env_choice("JAGATTN_ATTN_FWD_TILE", ("short", "long", "wide"), None)
FWD_HEAD_FAST_OVERRIDE = env_choice("JAGATTN_ATTN_FWD_HEAD_FAST", ("0", "1"), None)


def fwd_schedule(
    max_seqlen_q, max_seqlen_k, window_left: int, window_right: int, block_d: int = 128, block_dv: int = 128
) -> tuple[int, bool]:
    """``(KEYS_CLASS, HEAD_FAST)`` of the forward launch, from host ints only (no sync).

    KEYS_CLASS picks the first-listed tile (``_prune_fwd``), from the keys a query can see (``keys``:
    ``max_seqlen_k``, capped by a left window) and the keys the average query row sees (``span``:
    ``keys``, or about half of them for a causal band, i.e. a right side without a left one):

    - 2, wide (``span >= WIDE_SPAN_MIN`` and head dims padded to 128, where it was measured): 128x128 on
      8 warps, 3 stages (224 KiB of shared memory). H200,
      session 14, same process, fwd ms 128x64/8 warps (or the short tile) -> wide: causal mean 8192 Hkv 16
      2.201 -> 2.051, Hkv 4 2.717 -> 2.569, skewed 1.810 -> 1.743, non-causal mean 2048 (short tile
      before) 1.402 -> 1.326; lost on causal mean 2048 Hkv 4 (span ~1400: 0.777 -> 0.786, kept short);
    - 1, short (``keys < SHORT_KEYS_MAX``, not wide): the 64x64 tile on 4 warps with 3 stages (two
      programs per SM), and the grid with the heads fastest (HEAD_FAST), so every head's heaviest blocks
      start before any lighter one;
    - 0, long (the rest, and symbolic max lengths under torch.compile with dynamic shapes): 128x64 on
      8 warps, 3 stages.

    A wrong ``max_seqlen`` changes only the speed.
    Measured on an H200 (session 5, fwd ms, first-listed tiles, 128x64/8 warps -> 64x64/4 warps head-fast):
    causal mean 512 Hkv 16 / 4: 0.400 / 0.407 -> 0.324 / 0.326; mean 2048 Hkv 16 / 4: 0.790 / 0.792
    -> 0.784 / 0.735; non-causal mean 2048: 1.338 -> 1.336; window (1024, 0) mean 8192: 0.796 ->
    0.746. Not taken: the short tile on mean 8192 (10-12% slower), skewed (6%, whose max length is
    8089; the mean is ~1000 but the long sequences carry the work) and equal lengths of 3584 (2-3%,
    round 2), and head-fast with the long tile (within noise on every row).
    """
    cls = KEYS_LONG
    if isinstance(max_seqlen_q, int) and isinstance(max_seqlen_k, int):
        keys = max_seqlen_k
        if window_left >= 0 and window_right >= 0:
            keys = min(keys, window_left + window_right + 1)
        elif window_left >= 0:
            keys = min(keys, window_left + 1)
        span = keys
        if window_right >= 0 and window_left < 0:  # causal-like band: the average row sees about half
            span = (keys + window_right) // 2
        if span >= WIDE_SPAN_MIN and (block_d, block_dv) == (128, 128):
            cls = KEYS_WIDE
        elif keys < SHORT_KEYS_MAX:
            cls = KEYS_SHORT
    if FWD_TILE_OVERRIDE is not None:
        cls = {"long": KEYS_LONG, "short": KEYS_SHORT, "wide": KEYS_WIDE}[FWD_TILE_OVERRIDE]
    head_fast = cls == KEYS_SHORT
    if FWD_HEAD_FAST_OVERRIDE is not None:
        head_fast = FWD_HEAD_FAST_OVERRIDE == "1"
    return cls, head_fast


FWD_TMA = env_choice("JAGATTN_ATTN_FWD_TMA", ("auto", "0"), "auto")  # read at import


def use_tma(k: torch.Tensor, v: torch.Tensor) -> bool:
    """K/V loads of the forward through TMA descriptors (session 19 round 11, H100: 1.005-1.058x the forward)
    where ``tma_loads_ok``; ``JAGATTN_ATTN_FWD_TMA=0`` disables it."""
    return FWD_TMA != "0" and tma_loads_ok(k, v)


def attention_fwd(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    cu_seqlens_q: torch.Tensor,
    cu_seqlens_k: torch.Tensor,
    max_seqlen_q: int,
    max_seqlen_k: int,
    window_left: int,
    window_right: int,
    scale: float,
    softcap: float,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Launch the forward kernel. Inputs are validated by ``attention.api.make_inputs``.

    Args:
        q: ``[Tq, Hq, D]``; k: ``[Tk, Hkv, D]``; v: ``[Tk, Hkv, Dv]`` (last dim contiguous).
        cu_seqlens_q, cu_seqlens_k: ``[B+1]`` int32/int64.
        max_seqlen_q, max_seqlen_k: only pick the autotune bucket (never used for indexing).
        window_left, window_right: ``-1`` = unbounded (causal is ``window_right = 0``).

    Returns:
        ``o [Tq, Hq, Dv]`` in q's dtype and ``lse [Hq, Tq]`` fp32 (natural log, ``-inf`` where
        no key is visible).
    """
    tq, hq = q.shape[0], q.shape[1]
    hkv = k.shape[1]
    # head dims become constexprs: concrete ints even under dynamic-shape tracing
    d, dv = int(q.shape[2]), int(v.shape[2])
    batch = cu_seqlens_q.shape[0] - 1
    o = new_empty((tq, hq, dv), dtype=q.dtype, device=q.device)
    lse = new_empty((hq, tq), dtype=torch.float32, device=q.device)
    if tq == 0 or batch == 0:
        return o, lse
    has_left, has_right, wl, wr = window_args(window_left, window_right)
    has_softcap, qk_scale, softcap_in, softcap_out = softcap_args(scale, softcap)

    keys_class, head_fast = fwd_schedule(
        max_seqlen_q, max_seqlen_k, window_left, window_right, head_block(d), head_block(dv)
    )

    def grid(meta):
        if head_fast:
            return (num_slots(tq, batch, meta["BLOCK_M"]) * hq,)
        return (num_slots(tq, batch, meta["BLOCK_M"]), hq)

    launch(_attention_fwd_kernel, grid,
        q, k, v, o, lse, cu_seqlens_q, cu_seqlens_k,
        q.stride(0), q.stride(1), k.stride(0), k.stride(1), v.stride(0), v.stride(1),
        o.stride(0), o.stride(1), lse.stride(0),
        batch, hq // hkv, wl, wr, qk_scale, softcap_in, softcap_out,
        seq_bucket(max_seqlen_q, max_seqlen_k), keys_class, hq,
        d, dv, head_block(d), head_block(dv),
        has_left, has_right, has_softcap, (not has_softcap) and scale > 0, dot_precision(q.dtype),
        head_fast, use_tma(k, v),
    )  # fmt: skip
    return o, lse
