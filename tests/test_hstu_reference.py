"""The HSTU reference (SPEC.md section 2) against independent oracles, and the argument validation.

- the mask of the id formula against the in-words rules written as a per-(i, j) predicate
  (hypothesis) and against hand-checked matrices;
- forward and autograd gradients against a dense packed ``[L, L]`` oracle whose backward is
  the closed form of SPEC section 2;
- cached == last Δ rows of the full op; empty sequences, zero tokens, Dq != Dv, scaling_seqlen;
- one test per validation error.
"""

from __future__ import annotations

import random

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import jagattn
from jagattn.hstu.api import make_inputs
from jagattn.hstu.reference import hstu_mask, hstu_reference
from jagattn.testing import check_close, cu_seqlens, generator, randn

# ---------------------------------------------------------------------------------------------
# the mask, two ways


def visible_in_words(i: int, j: int, n: int, T: int | None, C: int, W: int, F: int) -> bool:
    """SPEC section 2 "in words", for sequences with at least C non-target tokens (U >= C).

    Contextual rows see every non-target key; history rows are causal; a target sees all
    history (and context) and itself, no other target; the window counts distance in id space
    (context collapses to one slot, targets sit just after the last history token); with F > 0
    the last F history rows and all targets ignore the window.
    """
    U = n if T is None else n - T
    assert U >= C
    if not (0 <= i < n and 0 <= j < n):
        return False
    if i == j:
        return True

    def kind(p: int) -> str:
        return "ctx" if p < C else ("tgt" if p >= U else "hist")

    def slot(p: int) -> int:
        if kind(p) == "ctx":
            return 0
        p = min(p, U)  # every target sits at the slot of position U
        return p - C + 1 if C > 0 else p

    ki, kj = kind(i), kind(j)
    if ki == "ctx":
        return kj != "tgt"
    if kj == "tgt":
        return False  # a history row never sees the future; a target sees no other target
    if ki == "hist" and j > i:
        return False
    if W > 0 and slot(i) - slot(j) > W:
        exempt = F > 0 and (ki == "tgt" or i >= U - F)
        if not exempt:
            return False
    return True


def words_mask(n: int, T: int | None, C: int, W: int, F: int) -> torch.Tensor:
    return torch.tensor(
        [[visible_in_words(i, j, n, T, C, W, F) for j in range(n)] for i in range(n)], dtype=torch.bool
    ).reshape(n, n)


@st.composite
def mask_params(draw):
    n = draw(st.integers(0, 40))
    C = draw(st.integers(0, min(6, n)))
    T = draw(st.one_of(st.none(), st.integers(0, n - C)))
    W = draw(st.integers(0, 12))
    F = draw(st.integers(0, 12))
    return n, T, C, W, F


@settings(max_examples=300, deadline=None)
@given(mask_params())
def test_mask_id_formula_matches_words(params):
    n, T, C, W, F = params
    got = hstu_mask(n, num_targets=T, contextual_seq_len=C, max_attn_len=W, min_full_attn_seq_len=F)
    want = words_mask(n, T, C, W, F)
    assert torch.equal(got, want), (
        f"n={n} T={T} C={C} W={W} F={F}\nid formula:\n{got.int()}\nwords:\n{want.int()}"
    )


def _m(rows: list[str]) -> torch.Tensor:
    return torch.tensor([[c == "1" for c in r] for r in rows], dtype=torch.bool)


HAND_CHECKED = [
    # 3 history + 2 targets: causal history, each target sees history and itself only
    (dict(n=5, num_targets=2), ["10000", "11000", "11100", "11110", "11101"]),
    # C=2 context, 3 history, 1 target: context rows see all non-targets
    (
        dict(n=6, num_targets=1, contextual_seq_len=2),
        ["111110", "111110", "111000", "111100", "111110", "111111"],
    ),
    # window 2 with 2 targets: the targets' window is anchored at the end of history (id 5)
    (
        dict(n=7, num_targets=2, max_attn_len=2),
        ["1000000", "1100000", "1110000", "0111000", "0011100", "0001110", "0001101"],
    ),
    # the same with F=1: the last history row and the targets ignore the window
    (
        dict(n=7, num_targets=2, max_attn_len=2, min_full_attn_seq_len=1),
        ["1000000", "1100000", "1110000", "0111000", "1111100", "1111110", "1111101"],
    ),
    # window 1 with C=2, no targets: late history rows lose the context (id distance)
    (
        dict(n=5, contextual_seq_len=2, max_attn_len=1),
        ["11111", "11111", "11100", "00110", "00011"],
    ),
    # degenerate (documented in api.py): fewer than C-1 tokens -> M = 0, only the diagonal
    (dict(n=2, contextual_seq_len=3), ["10", "01"]),
    # exactly C tokens -> M = 1, the context rows see each other
    (dict(n=3, contextual_seq_len=3), ["111", "111", "111"]),
    # all targets, no context: every row sees only itself
    (dict(n=3, num_targets=3), ["100", "010", "001"]),
]


@pytest.mark.parametrize("kwargs, rows", HAND_CHECKED)
def test_mask_hand_checked(kwargs, rows):
    n = kwargs.pop("n")
    got = hstu_mask(n, **kwargs)
    assert torch.equal(got, _m(rows)), f"{kwargs}\n{got.int()}"


# ---------------------------------------------------------------------------------------------
# dense packed oracle with the closed-form backward


def _dense_oracle(q, k, v, do, lens, targets, *, alpha, S, C, W, F):
    """Forward and SPEC closed-form gradients over the whole packed batch as one [H, L, L] problem."""
    L = q.shape[0]
    mask = torch.zeros(L, L, dtype=torch.bool)
    start = 0
    for b, n in enumerate(lens):
        T = None if targets is None else targets[b]
        mask[start : start + n, start : start + n] = words_mask(n, T, C, W, F)
        start += n
    m = mask.to(q.dtype)
    s = alpha * torch.einsum("ihd,jhd->hij", q, k)
    sig = torch.sigmoid(s)
    a = m * s * sig / S
    o = torch.einsum("hij,jhd->ihd", a, v)
    dv = torch.einsum("hij,ihd->jhd", a, do)
    dp = torch.einsum("ihd,jhd->hij", do, v)
    ds = m / S * dp * sig * (1 + s * (1 - sig))
    dq = alpha * torch.einsum("hij,jhd->ihd", ds, k)
    dk = alpha * torch.einsum("hij,ihd->jhd", ds, q)
    return o, dq, dk, dv


def _batch(lens, h, dq, dv, *, seed, dtype=torch.float64, targets_max=None, C=0):
    g = generator(seed)
    L = sum(lens)
    q = randn((L, h, dq), generator=g, dtype=dtype, requires_grad=True)
    k = randn((L, h, dq), generator=g, dtype=dtype, requires_grad=True)
    v = randn((L, h, dv), generator=g, dtype=dtype, requires_grad=True)
    do = randn((L, h, dv), generator=g, dtype=dtype)
    targets = None
    if targets_max is not None:
        rng = random.Random(seed)
        targets = [rng.randint(0, max(0, min(targets_max, n - C))) for n in lens]
    return q, k, v, do, targets


ORACLE_CASES = [
    # (lens, T max or None, C, W, F, scaling_seqlen, Dq, Dv)
    ([5, 0, 17, 1, 33], None, 0, 0, 0, None, 8, 8),
    ([5, 0, 17, 1, 33], 4, 0, 0, 0, None, 8, 4),
    ([6, 0, 17, 3, 33], 4, 3, 0, 0, None, 4, 8),
    ([5, 0, 17, 1, 33], 5, 0, 3, 0, None, 8, 8),
    ([5, 0, 17, 1, 33], 5, 0, 3, 4, 20, 8, 8),
    ([6, 0, 17, 2, 33], 5, 2, 4, 3, None, 8, 16),
    ([6, 40, 17, 2], None, 2, 5, 7, 64, 16, 8),
]


@pytest.mark.parametrize("lens, tmax, C, W, F, scaling, dq, dv", ORACLE_CASES)
def test_reference_matches_dense_oracle_fp64(lens, tmax, C, W, F, scaling, dq, dv):
    h, alpha = 2, 0.37
    q, k, v, do, targets = _batch(lens, h, dq, dv, seed=len(lens) * 7 + C + W + F, targets_max=tmax, C=C)
    cu = cu_seqlens(lens)
    nt = None if targets is None else torch.tensor(targets, dtype=torch.int32)
    max_len = max(lens) + 3  # S follows the declared max_seq_len, not the longest sequence
    o = jagattn.hstu_attention(
        q, k, v, cu, max_len, alpha=alpha, num_targets=nt, contextual_seq_len=C,
        max_attn_len=W, min_full_attn_seq_len=F, scaling_seqlen=scaling, backend="reference",
    )  # fmt: skip
    dq_, dk_, dv_ = torch.autograd.grad(o, (q, k, v), do)
    S = scaling if scaling is not None else max_len
    with torch.no_grad():
        want = _dense_oracle(q, k, v, do, lens, targets, alpha=alpha, S=S, C=C, W=W, F=F)
    for name, got, ref in zip(("o", "dq", "dk", "dv"), (o, dq_, dk_, dv_), want, strict=True):
        torch.testing.assert_close(got, ref, rtol=1e-10, atol=1e-12, msg=lambda m, name=name: f"{name}: {m}")


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_reference_tolerance_rule_low_precision(dtype):
    """fp32-accumulating reference within SPEC section 5 of the fp64 oracle, with the input-dtype run as yardstick."""
    lens, h, dq, dv, alpha, C, W, F = [9, 0, 40, 2, 23], 2, 16, 8, 0.2, 2, 6, 3
    q, k, v, do, targets = _batch(lens, h, dq, dv, seed=11, dtype=dtype, targets_max=4, C=C)
    cu = cu_seqlens(lens)
    nt = torch.tensor(targets)
    kw = dict(alpha=alpha, num_targets=nt, contextual_seq_len=C, max_attn_len=W, min_full_attn_seq_len=F)
    o = hstu_reference(q, k, v, cu, scale_len=40, **kw)
    grads = torch.autograd.grad(o, (q, k, v), do)
    o_lp = hstu_reference(q, k, v, cu, scale_len=40, compute_dtype=dtype, **kw)
    grads_lp = torch.autograd.grad(o_lp, (q, k, v), do)
    q64, k64, v64, do64 = (t.detach().double() for t in (q, k, v, do))
    gold = _dense_oracle(q64, k64, v64, do64, lens, targets, alpha=alpha, S=40, C=C, W=W, F=F)
    for name, got, lp, g in zip(("o", "dq", "dk", "dv"), (o, *grads), (o_lp, *grads_lp), gold, strict=True):
        check_close(name, got, g, lp)
    # the input-dtype run really is rounder than the fp32 one (the yardstick is not vacuous)
    assert (o_lp.double() - gold[0]).abs().max() > 0


# ---------------------------------------------------------------------------------------------
# cached, empties, zero tokens, Dq != Dv, scaling_seqlen


@pytest.mark.parametrize("delta", [1, 3])
@pytest.mark.parametrize("C, W, F, tmax", [(0, 0, 0, None), (2, 3, 2, 3), (0, 4, 0, 2)])
def test_cached_is_last_delta_rows(delta, C, W, F, tmax):
    lens = [5, 3, 12, 7]
    q, k, v, _, targets = _batch(lens, 2, 8, 4, seed=3, targets_max=tmax, C=C)
    cu = cu_seqlens(lens)
    nt = None if targets is None else torch.tensor(targets, dtype=torch.int64)
    kw = dict(alpha=0.5, num_targets=nt, contextual_seq_len=C, max_attn_len=W, min_full_attn_seq_len=F)
    full = jagattn.hstu_attention(q, k, v, cu, 12, **kw)
    rows = torch.cat([torch.arange(e - delta, e) for e in cu[1:].tolist()])
    with torch.no_grad():
        cached = jagattn.hstu_attention_cached(q.detach()[rows], k.detach(), v.detach(), cu, 12, **kw)
    assert cached.shape == (len(lens) * delta, 2, 4)
    torch.testing.assert_close(cached, full.detach()[rows], rtol=0, atol=1e-12)


def test_empty_sequences_and_length_one():
    lens = [0, 1, 0, 6, 0]
    q, k, v, do, _ = _batch(lens, 3, 8, 8, seed=5)
    cu = cu_seqlens(lens)
    o = jagattn.hstu_attention(q, k, v, cu, 6, alpha=0.7)
    # length-1 sequence: the token sees only itself
    s = 0.7 * (q[0] * k[0]).sum(-1, keepdim=True)
    torch.testing.assert_close(o[0], torch.nn.functional.silu(s) / 6 * v[0])
    dq, dk, dv = torch.autograd.grad(o, (q, k, v), do)
    assert all(torch.isfinite(t).all() for t in (dq, dk, dv))


@pytest.mark.parametrize("lens", [[], [0], [0, 0, 0]])
@pytest.mark.parametrize("cached", [False, True])
def test_zero_tokens_gives_zero_grads(lens, cached):
    q, k, v, _, _ = _batch(lens, 2, 8, 4, seed=1)
    cu = cu_seqlens(lens)
    fn = jagattn.hstu_attention_cached if cached else jagattn.hstu_attention
    o = fn(q, k, v, cu, 0, alpha=1.0, num_targets=torch.zeros(len(lens), dtype=torch.int32))
    assert o.shape == (0, 2, 4)
    dq, dk, dv = torch.autograd.grad(o.sum(), (q, k, v))
    assert dq.shape == q.shape and dv.shape == v.shape
    assert all(t.abs().sum() == 0 for t in (dq, dk, dv))


def test_dq_ne_dv_shapes():
    lens = [4, 9]
    q, k, v, do, _ = _batch(lens, 2, 12, 20, seed=9)
    o = jagattn.hstu_attention(q, k, v, cu_seqlens(lens), 9, alpha=0.1)
    assert o.shape == (13, 2, 20)
    dq, dk, dv = torch.autograd.grad(o, (q, k, v), do)
    assert dq.shape == (13, 2, 12) and dk.shape == (13, 2, 12) and dv.shape == (13, 2, 20)


def test_scaling_seqlen_replaces_max_seq_len():
    lens = [4, 9]
    q, k, v, _, _ = _batch(lens, 2, 8, 8, seed=2)
    cu = cu_seqlens(lens)
    by_max = jagattn.hstu_attention(q, k, v, cu, 10, alpha=0.3)
    by_scaling = jagattn.hstu_attention(q, k, v, cu, 10, alpha=0.3, scaling_seqlen=25)
    other_max = jagattn.hstu_attention(q, k, v, cu, 30, alpha=0.3, scaling_seqlen=25)
    torch.testing.assert_close(by_scaling * 25, by_max * 10)
    torch.testing.assert_close(other_max, by_scaling, rtol=0, atol=0)


def test_inputs_not_mutated_and_explain():
    lens = [3, 5]
    q, k, v, _, _ = _batch(lens, 2, 8, 8, seed=4)
    copies = [t.detach().clone() for t in (q, k, v)]
    cu = cu_seqlens(lens)
    jagattn.hstu_attention(q, k, v, cu, 5, alpha=0.3, num_targets=torch.tensor([1, 2]))
    assert all(torch.equal(a, b) for a, b in zip((q, k, v), copies, strict=True))
    table = jagattn.explain("hstu", q, k, v, cu, 5, alpha=0.3)
    assert "reference" in str(table)
    inp = make_inputs(q[:4], k, v, cu, 5, alpha=0.3, cached=True)
    assert inp.cached and inp.delta == 2 and inp.scale_len == 5 and inp.head_dim_v == 8


# ---------------------------------------------------------------------------------------------
# validation: every error names its argument


def _args():
    lens = [3, 5]
    q, k, v, _, _ = _batch(lens, 2, 8, 4, seed=0, dtype=torch.float32)
    return dict(q=q.detach(), k=k.detach(), v=v.detach(), seq_offsets=cu_seqlens(lens), max_seq_len=5)


def _call(cached=False, **overrides):
    a = _args()
    kw = dict(alpha=0.5)
    for key, val in overrides.items():
        if key in a:
            a[key] = val
        else:
            kw[key] = val
    fn = jagattn.hstu_attention_cached if cached else jagattn.hstu_attention
    q = a["q"]
    if cached and "q" not in overrides:
        q = q[:2]  # Δ = 1 of 2 sequences
    return fn(q, a["k"], a["v"], a["seq_offsets"], a["max_seq_len"], **kw)


_f = torch.float32
BAD = [
    (dict(q=[1.0]), TypeError, "q: expected a torch.Tensor"),
    (dict(q=torch.randn(8, 8)), ValueError, "q: expected 3 dims"),
    (dict(k=torch.randn(8, 2, 8, 1)), ValueError, "k: expected 3 dims"),
    (dict(v=torch.randn(8, 2)), ValueError, "v: expected 3 dims"),
    (dict(q=torch.randn(8, 2, 8).to(torch.int32)), ValueError, "q: dtype"),
    (dict(k=torch.randn(8, 2, 8, dtype=torch.float64)), ValueError, "k: dtype"),
    (dict(v=torch.randn(8, 2, 4, dtype=torch.float16)), ValueError, "v: dtype"),
    (dict(q=torch.randn(8, 2, 16)[..., ::2]), ValueError, "q: the last dim must be contiguous"),
    (dict(v=torch.randn(8, 2, 8)[..., ::2]), ValueError, "v: the last dim must be contiguous"),
    (dict(k=torch.randn(8, 3, 8)), ValueError, "k: shape"),
    (dict(k=torch.randn(8, 2, 6)), ValueError, "k: shape"),
    (dict(v=torch.randn(7, 2, 4)), ValueError, "v: shape"),
    (dict(v=torch.randn(8, 3, 4)), ValueError, "v: shape"),
    (dict(q=torch.randn(8, 0, 8), k=torch.randn(8, 0, 8), v=torch.randn(8, 0, 4)), ValueError, "heads"),
    (dict(q=torch.randn(8, 2, 0), k=torch.randn(8, 2, 0)), ValueError, "q: head dim Dq"),
    (dict(v=torch.randn(8, 2, 0)), ValueError, "v: head dim Dv"),
    (dict(q=torch.randn(7, 2, 8)), ValueError, "q: has 7 rows"),
    (dict(seq_offsets=[0, 3, 8]), TypeError, "seq_offsets"),
    (dict(seq_offsets=torch.tensor([[0, 3, 8]])), ValueError, "seq_offsets: expected 1 dim"),
    (dict(seq_offsets=torch.tensor([0.0, 3.0, 8.0])), ValueError, "seq_offsets: dtype"),
    (
        dict(seq_offsets=torch.tensor([], dtype=torch.int32)),
        ValueError,
        "seq_offsets: must have at least one",
    ),
    (dict(seq_offsets=torch.tensor([1, 3, 8])), ValueError, r"seq_offsets: must start at 0"),
    (dict(seq_offsets=torch.tensor([0, 5, 3, 8])), ValueError, r"seq_offsets: must be non-decreasing"),
    (dict(seq_offsets=torch.tensor([0, 3, 7])), ValueError, r"seq_offsets: last value 7"),
    (dict(max_seq_len=4), ValueError, r"max_seq_len: 4 is smaller than the longest"),
    (dict(max_seq_len=3), ValueError, r"max_seq_len: 3 is too small"),
    (dict(max_seq_len=-1), ValueError, r"max_seq_len: must be >= 0"),
    (dict(max_seq_len=5.0), TypeError, r"max_seq_len: expected an int"),
    (dict(max_seq_len=True), TypeError, r"max_seq_len: expected an int"),
    (dict(alpha="x"), TypeError, r"alpha: expected a float"),
    (dict(alpha=float("nan")), ValueError, r"alpha: must be finite"),
    (dict(alpha=float("inf")), ValueError, r"alpha: must be finite"),
    (dict(num_targets=[1, 1]), TypeError, r"num_targets: expected"),
    (dict(num_targets=torch.tensor([1, 1, 1])), ValueError, r"num_targets: expected shape \[B\] = \[2\]"),
    (dict(num_targets=torch.tensor([[1, 1]])), ValueError, r"num_targets: expected shape"),
    (dict(num_targets=torch.tensor([1.0, 1.0])), ValueError, r"num_targets: dtype"),
    (dict(num_targets=torch.tensor([1, -1])), ValueError, r"num_targets: num_targets\[1\] = -1"),
    (
        dict(num_targets=torch.tensor([4, 1])),
        ValueError,
        r"num_targets: num_targets\[0\] = 4 must be in \[0, n_b\]",
    ),
    (dict(contextual_seq_len=-1), ValueError, r"contextual_seq_len: must be >= 0, got -1"),
    (dict(contextual_seq_len=1.5), TypeError, r"contextual_seq_len: expected an int"),
    (dict(max_attn_len=-2), ValueError, r"max_attn_len: must be >= 0, got -2"),
    (dict(max_attn_len=None), TypeError, r"max_attn_len: expected an int"),
    (dict(min_full_attn_seq_len=-3), ValueError, r"min_full_attn_seq_len: must be >= 0, got -3"),
    (dict(min_full_attn_seq_len=True), TypeError, r"min_full_attn_seq_len: expected an int"),
    (dict(scaling_seqlen=0), ValueError, r"scaling_seqlen: must be >= 1, got 0"),
    (dict(scaling_seqlen=2.0), TypeError, r"scaling_seqlen: expected an int"),
    (dict(deterministic=1), TypeError, r"deterministic: expected a bool"),
    (dict(backend=3), TypeError, r"backend: expected a str"),
    (dict(backend="nope"), ValueError, r"backend: family 'hstu' has no backend 'nope'"),
]


@pytest.mark.parametrize("overrides, exc, match", BAD, ids=[m for _, _, m in BAD])
def test_validation_errors(overrides, exc, match):
    with pytest.raises(exc, match=match):
        _call(**overrides)


BAD_CACHED = [
    (dict(q=torch.randn(3, 2, 8)), ValueError, r"delta_q: 3 rows is not a multiple of the batch size B = 2"),
    (dict(q=torch.randn(8, 2)), ValueError, r"delta_q: expected 3 dims"),
    (dict(q=torch.randn(2, 2, 8, dtype=torch.float64)), ValueError, r"k: dtype .* differs from delta_q"),
    (dict(q=torch.randn(2, 2, 6)), ValueError, r"k: shape .* to match delta_q"),
    (
        dict(q=torch.randn(8, 2, 8)),
        ValueError,
        r"delta_q: holds Δ = 4 rows per sequence but sequence 0 has only 3",
    ),
    (dict(q=torch.randn(12, 2, 8)), ValueError, r"delta_q: Δ = 6 rows per sequence exceeds max_seq_len = 5"),
    (
        dict(
            q=torch.randn(2, 2, 8),
            seq_offsets=torch.tensor([0]),
            k=torch.randn(0, 2, 8),
            v=torch.randn(0, 2, 4),
        ),
        ValueError,
        r"delta_q: seq_offsets holds 0 sequences but delta_q has 2 rows",
    ),
]


@pytest.mark.parametrize("overrides, exc, match", BAD_CACHED, ids=[m for _, _, m in BAD_CACHED])
def test_validation_errors_cached(overrides, exc, match):
    with pytest.raises(exc, match=match):
        _call(cached=True, **overrides)


def test_validation_device_mismatch():
    if not torch.cuda.is_available():
        a = _args()
        meta_k = a["k"].to("meta")
        with pytest.raises(ValueError, match=r"k: is on meta but q is on cpu"):
            jagattn.hstu_attention(a["q"], meta_k, a["v"], a["seq_offsets"], 5, alpha=0.5)
        with pytest.raises(ValueError, match=r"num_targets: is on meta"):
            jagattn.hstu_attention(
                a["q"], a["k"], a["v"], a["seq_offsets"], 5, alpha=0.5,
                num_targets=torch.tensor([1, 1], device="meta"),
            )  # fmt: skip
    else:
        a = _args()
        with pytest.raises(ValueError, match=r"v: is on cuda"):
            jagattn.hstu_attention(a["q"], a["k"], a["v"].cuda(), a["seq_offsets"], 5, alpha=0.5)
        with pytest.raises(ValueError, match=r"seq_offsets: is on cuda"):
            jagattn.hstu_attention(a["q"], a["k"], a["v"], a["seq_offsets"].cuda(), 5, alpha=0.5)


def test_alpha_is_required_keyword():
    a = _args()
    with pytest.raises(TypeError, match="alpha"):
        jagattn.hstu_attention(a["q"], a["k"], a["v"], a["seq_offsets"], 5)


def test_max_seq_len_none_is_computed():
    a = _args()
    o = jagattn.hstu_attention(a["q"], a["k"], a["v"], a["seq_offsets"], None, alpha=0.5)
    torch.testing.assert_close(
        o, jagattn.hstu_attention(a["q"], a["k"], a["v"], a["seq_offsets"], 5, alpha=0.5)
    )
