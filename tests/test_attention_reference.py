"""The attention reference against independent oracles (SDPA per sequence, an explicit-loop mask)."""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import jagattn
from jagattn import testing
from jagattn.attention.reference import attention_reference, visible_mask

F64 = torch.float64


def loop_mask(lq, lk, causal, window):
    """SPEC section 1 mask written as a per-(i, j) predicate, independently of the reference."""
    left, right = window
    if causal:
        right = 0
    m = torch.zeros(lq, lk, dtype=torch.bool)
    for i in range(lq):
        for j in range(lk):
            ok = True
            if left >= 0 and j < i + (lk - lq) - left:
                ok = False
            if right >= 0 and j > i + (lk - lq) + right:
                ok = False
            m[i, j] = ok
    return m


def oracle(q, k, v, lens_q, lens_k, causal, window, scale, softcap):
    """Per sequence and head: SDPA (no softcap) or a logsumexp formulation (softcap), fp64."""
    hq, hkv = q.shape[1], k.shape[1]
    group = hq // hkv
    outs, lses = [], []
    sq = sk = 0
    for lq, lk in zip(lens_q, lens_k, strict=False):
        qb, kb, vb = q[sq : sq + lq], k[sk : sk + lk], v[sk : sk + lk]
        sq += lq
        sk += lk
        if lq == 0:
            continue
        mask = loop_mask(lq, lk, causal, window)
        rows_o, rows_l = [], []
        for h in range(hq):
            qh, kh, vh = qb[:, h], kb[:, h // group], vb[:, h // group]
            s = (qh @ kh.T) * scale
            if softcap > 0:
                s = softcap * torch.tanh(s / softcap)
            s = s.masked_fill(~mask, -math.inf)
            lse = torch.logsumexp(s, dim=-1) if lk > 0 else torch.full((lq,), -math.inf, dtype=F64)
            if softcap > 0 or lk == 0:
                p = torch.exp(s - lse[:, None].clamp_min(-1e300))
                p = torch.where(mask, p, torch.zeros_like(p))
                oh = p @ vh
            else:
                # SDPA returns NaN on rows with no visible key: those rows are zeros by the spec.
                has = mask.any(dim=1)
                safe_mask = mask | ~has[:, None]
                oh = torch.nn.functional.scaled_dot_product_attention(
                    qh[None], kh[None], vh[None], attn_mask=safe_mask[None], scale=scale
                )[0]
                oh = torch.where(has[:, None], oh, torch.zeros_like(oh))
            rows_o.append(oh)
            rows_l.append(lse)
        outs.append(torch.stack(rows_o, 1))
        lses.append(torch.stack(rows_l, 0))
    o = torch.cat(outs, 0) if outs else q.new_zeros(0, hq, v.shape[2])
    lse = torch.cat(lses, 1) if lses else q.new_zeros(hq, 0)
    return o, lse


def _run_both(lens_q, lens_k, hq, hkv, d, dv, causal, window, softcap, seed, scale=None):
    gen = testing.generator(seed)
    tq, tk = sum(lens_q), sum(lens_k)
    q = testing.randn((tq, hq, d), dtype=F64, generator=gen, requires_grad=True)
    k = testing.randn((tk, hkv, d), dtype=F64, generator=gen, requires_grad=True)
    v = testing.randn((tk, hkv, dv), dtype=F64, generator=gen, requires_grad=True)
    cu_q, cu_k = testing.cu_seqlens(lens_q), testing.cu_seqlens(lens_k, dtype=torch.int64)
    sc = d**-0.5 if scale is None else scale
    o, lse = jagattn.attention(
        q, k, v, cu_q, cu_k, causal=causal, window=window, softcap=softcap, scale=scale, return_lse=True
    )
    o2, lse2 = oracle(q, k, v, lens_q, lens_k, causal, window, sc, softcap)
    torch.testing.assert_close(o, o2, atol=1e-10, rtol=1e-9)
    assert torch.equal(torch.isinf(lse), torch.isinf(lse2))
    torch.testing.assert_close(
        lse[torch.isfinite(lse)], lse2[torch.isfinite(lse2)].float(), atol=1e-5, rtol=1e-5
    )
    do = testing.randn(o.shape, dtype=F64, generator=gen)
    g1 = torch.autograd.grad((o * do).sum(), (q, k, v), allow_unused=True)
    if o2.requires_grad:
        g2 = torch.autograd.grad((o2 * do).sum(), (q, k, v), allow_unused=True)
    else:  # the oracle produced no row at all
        g2 = (None, None, None)
    for name, a, b, x in zip("qkv", g1, g2, (q, k, v), strict=False):
        a = torch.zeros_like(x) if a is None else a
        b = torch.zeros_like(x) if b is None else b
        assert torch.isfinite(a).all(), f"d{name} has non-finite values"
        torch.testing.assert_close(a, b, atol=1e-9, rtol=1e-8, msg=lambda m, n=name: f"d{n}: {m}")


@pytest.mark.parametrize(
    "causal,window", [(False, (-1, -1)), (True, (-1, -1)), (True, (5, -1)), (False, (3, 2))]
)
@pytest.mark.parametrize("kind", ["uniform", "empties", "odd"])
def test_reference_matches_oracle_self_attention(kind, causal, window):
    lens = testing.random_lengths(kind, batch=4, max_len=40, seed=3)
    _run_both(lens, lens, 4, 2, 16, 8, causal, window, 0.0, seed=1)


@pytest.mark.parametrize("causal", [False, True])
def test_reference_q_shorter_and_longer_than_k_bottom_right(causal):
    # Lq < Lk: the query block sits at the bottom right; Lq > Lk: first rows see nothing if causal.
    _run_both([3, 10, 0, 7], [9, 4, 5, 7], 2, 1, 8, 8, causal, (-1, -1), 0.0, seed=2)


def test_reference_softcap_and_custom_scale():
    _run_both([17, 5], [17, 5], 2, 2, 8, 4, True, (-1, -1), 5.0, seed=4, scale=0.7)


def test_reference_mqa_and_window_both_sides():
    _run_both([33, 1, 12], [33, 1, 12], 6, 1, 8, 16, False, (4, 0), 0.0, seed=5)


@settings(max_examples=25, deadline=None)
@given(
    lens_q=st.lists(st.integers(0, 12), min_size=1, max_size=4),
    extra=st.lists(st.integers(-3, 3), min_size=4, max_size=4),
    group=st.sampled_from([1, 2, 3]),
    hkv=st.sampled_from([1, 2]),
    causal=st.booleans(),
    left=st.integers(-1, 6),
    right=st.integers(-1, 3),
    softcap=st.sampled_from([0.0, 2.0]),
    seed=st.integers(0, 10_000),
)
def test_reference_property(lens_q, extra, group, hkv, causal, left, right, softcap, seed):
    lens_k = [max(0, n + e) for n, e in zip(lens_q, extra, strict=False)]
    _run_both(lens_q, lens_k, group * hkv, hkv, 8, 4, causal, (left, right), softcap, seed)


def test_visible_mask_matches_loop():
    for lq, lk in [(5, 5), (3, 7), (7, 3), (1, 1), (0, 4), (4, 0)]:
        for causal in (False, True):
            for window in [(-1, -1), (0, 0), (2, -1), (-1, 1), (1, 3)]:
                assert torch.equal(
                    visible_mask(lq, lk, causal=causal, window=window), loop_mask(lq, lk, causal, window)
                )


def test_rows_without_keys_are_zero_with_minus_inf_lse_and_zero_grads():
    # Sequence 0 has 3 queries and no key; causal with Lq > Lk leaves the first rows of seq 1 empty.
    lens_q, lens_k = [3, 6], [0, 2]
    gen = testing.generator(0)
    q = testing.randn((9, 2, 8), generator=gen, requires_grad=True)
    k = testing.randn((2, 2, 8), generator=gen, requires_grad=True)
    v = testing.randn((2, 2, 8), generator=gen, requires_grad=True)
    o, lse = jagattn.attention(
        q, k, v, testing.cu_seqlens(lens_q), testing.cu_seqlens(lens_k), causal=True, return_lse=True
    )
    empty_rows = torch.arange(
        7
    )  # seq 0: rows 0-2; seq 1 (rows 3-8): local i sees j <= i - 4, so 0-3 are empty
    assert torch.all(o[empty_rows] == 0)
    assert torch.all(torch.isneginf(lse[:, empty_rows]))
    assert torch.isfinite(lse[:, 7:]).all()
    (o.sum() + lse[:, 7:].sum()).backward()
    assert torch.all(q.grad[empty_rows] == 0)
    for t in (q, k, v):
        assert torch.isfinite(t.grad).all()


def test_zero_total_tokens_forward_and_backward():
    q = torch.randn(0, 4, 8, requires_grad=True)
    k = torch.randn(0, 2, 8, requires_grad=True)
    v = torch.randn(0, 2, 4, requires_grad=True)
    cu = torch.zeros(3, dtype=torch.int32)
    o, lse = jagattn.attention(q, k, v, cu, causal=True, return_lse=True)
    assert o.shape == (0, 4, 4) and lse.shape == (4, 0)
    o.sum().backward()
    assert q.grad.shape == q.shape and k.grad.shape == k.shape and v.grad.shape == v.shape


def test_no_sequences_at_all():
    q = torch.randn(0, 2, 8)
    o = jagattn.attention(q, q, q, torch.zeros(1, dtype=torch.int64))
    assert o.shape == (0, 2, 8)


def test_output_dtype_lse_dtype_and_inputs_not_mutated():
    gen = testing.generator(7)
    lens = [5, 9]
    q = testing.randn((14, 2, 16), dtype=torch.bfloat16, generator=gen)
    k = testing.randn((14, 2, 16), dtype=torch.bfloat16, generator=gen)
    v = testing.randn((14, 2, 16), dtype=torch.bfloat16, generator=gen)
    before = [t.clone() for t in (q, k, v)]
    cu = testing.cu_seqlens(lens)
    o, lse = jagattn.attention(q, k, v, cu, causal=True, return_lse=True)
    assert o.dtype == torch.bfloat16 and lse.dtype == torch.float32
    for a, b in zip((q, k, v), before, strict=False):
        assert torch.equal(a, b)


def test_strided_heads_accepted():
    # Only the last dim must be contiguous: q as a slice of a wider packed qkv tensor.
    gen = testing.generator(8)
    qkv = testing.randn((20, 3, 4, 8), generator=gen)
    q, k, v = qkv[:, 0], qkv[:, 1], qkv[:, 2]
    assert not q.is_contiguous()
    cu = testing.cu_seqlens([12, 8])
    o = jagattn.attention(q, k, v, cu, causal=True)
    o2 = jagattn.attention(q.contiguous(), k.contiguous(), v.contiguous(), cu, causal=True)
    assert torch.equal(o, o2)


def test_tolerance_rule_can_fail():
    # The rule must reject an output with an error well beyond the low-precision reference's.
    gen = testing.generator(9)
    lens = [30, 17]
    q, k, v = (testing.randn((47, 2, 16), dtype=torch.float16, generator=gen) for _ in range(3))
    cu = testing.cu_seqlens(lens)
    gold, _ = attention_reference(q.double(), k.double(), v.double(), cu, cu, causal=True)
    lowp, _ = attention_reference(q, k, v, cu, cu, causal=True, compute_dtype=torch.float16)
    good, _ = attention_reference(q, k, v, cu, cu, causal=True)
    testing.check_close("o", good, gold, lowp)
    bad = good.clone()
    bad[3, 1, 2] += 0.05
    with pytest.raises(AssertionError, match="o: backend error"):
        testing.check_close("o", bad, gold, lowp)
    nan = good.clone()
    nan[0, 0, 0] = float("nan")
    with pytest.raises(AssertionError):
        testing.check_close("o", nan, gold, lowp)
