"""Every bad argument of jagattn.attention raises a TypeError/ValueError naming it, before compute."""

import pytest
import torch

import jagattn
from jagattn import testing


def _good(t=10, hq=4, hkv=2, d=8, dv=8, dtype=torch.float32):
    gen = testing.generator(0)
    q = testing.randn((t, hq, d), dtype=dtype, generator=gen)
    k = testing.randn((t, hkv, d), dtype=dtype, generator=gen)
    v = testing.randn((t, hkv, dv), dtype=dtype, generator=gen)
    cu = testing.cu_seqlens([4, 6])
    return q, k, v, cu


def _call(**over):
    q, k, v, cu = _good()
    args = dict(q=q, k=k, v=v, cu_seqlens_q=cu)
    args.update(over)
    return jagattn.attention(**args)


CASES = [
    # (overrides, exception, pattern)
    (dict(q=[1, 2]), TypeError, "q: expected a torch.Tensor"),
    (dict(q=torch.randn(10, 4)), ValueError, "q: expected 3 dims"),
    (dict(q=torch.randn(10, 4, 8).to(torch.int32)), ValueError, "q: dtype"),
    (dict(k=torch.randn(10, 2, 8, dtype=torch.float64)), ValueError, "k: dtype .* differs"),
    (dict(k=torch.randn(10, 3, 8)), ValueError, "v: shape"),
    (dict(k=torch.randn(10, 2, 16)), ValueError, "k: head dim 16"),
    (dict(k=torch.randn(10, 3, 8), v=torch.randn(10, 3, 8)), ValueError, "Hq=4 must be a multiple of Hkv=3"),
    (dict(v=torch.randn(9, 2, 8)), ValueError, "v: shape"),
    (dict(q=torch.randn(10, 8, 4).transpose(1, 2)), ValueError, "q: the last dim must be contiguous"),
    (dict(q=torch.randn(10, 4, 0)), ValueError, "head dims must be positive"),
    (dict(cu_seqlens_q=[0, 4, 10]), TypeError, "cu_seqlens_q: expected a 1-D"),
    (dict(cu_seqlens_q=torch.tensor([[0, 4, 10]])), ValueError, "cu_seqlens_q: expected 1 dim"),
    (
        dict(cu_seqlens_q=torch.tensor([0.0, 4.0, 10.0])),
        ValueError,
        "cu_seqlens_q: dtype must be int32 or int64",
    ),
    (
        dict(cu_seqlens_q=torch.tensor([], dtype=torch.int32)),
        ValueError,
        "cu_seqlens_q: must have at least one",
    ),
    (dict(cu_seqlens_q=torch.tensor([1, 4, 10])), ValueError, r"cu_seqlens_q: must start at 0"),
    (dict(cu_seqlens_q=torch.tensor([0, 7, 4, 10])), ValueError, "cu_seqlens_q: must be non-decreasing"),
    (dict(cu_seqlens_q=torch.tensor([0, 4, 9])), ValueError, "cu_seqlens_q: last value 9 must equal"),
    (dict(max_seqlen_q=5), ValueError, "max_seqlen_q: 5 is smaller than the longest sequence"),
    # self-attention (cu_seqlens_k None): the keys' longest sequence is the queries' (session 45's audit: accepted)
    (
        dict(max_seqlen_k=5),
        ValueError,
        "max_seqlen_k: 5 is smaller than the longest sequence in cu_seqlens_q",
    ),
    (dict(max_seqlen_q=6.0), TypeError, "max_seqlen_q: expected an int"),
    (dict(max_seqlen_q=True), TypeError, "max_seqlen_q: expected an int"),
    (dict(max_seqlen_q=-1), ValueError, "max_seqlen_q: must be >= 0"),
    (dict(causal=1), TypeError, "causal: expected a bool"),
    (dict(deterministic="yes"), TypeError, "deterministic: expected a bool"),
    (dict(return_lse=None), TypeError, "return_lse: expected a bool"),
    (dict(window=5), TypeError, "window: expected a"),
    (dict(window=(1, 2, 3)), TypeError, "window: expected a"),
    (dict(window=(-2, 0)), ValueError, "window: left must be -1"),
    (dict(window=(0, 1.5)), TypeError, r"window\[right\]: expected an int"),
    (dict(scale="x"), TypeError, "scale: expected a float"),
    (dict(scale=float("nan")), ValueError, "scale: must be finite"),
    (dict(softcap=-1.0), ValueError, "softcap: must be >= 0"),
    (dict(backend=3), TypeError, "backend: expected a str"),
    (dict(backend="nope"), ValueError, "backend: family 'attention' has no backend 'nope'"),
]


@pytest.mark.parametrize("over,exc,pattern", CASES, ids=[c[2][:40] for c in CASES])
def test_bad_argument(over, exc, pattern):
    with pytest.raises(exc, match=pattern):
        _call(**over)


def test_cross_attention_errors():
    q, k, v, cu = _good()
    k2, v2 = torch.randn(7, 2, 8), torch.randn(7, 2, 8)
    with pytest.raises(ValueError, match="cu_seqlens_k: is None .* k has 7 rows"):
        jagattn.attention(q, k2, v2, cu)
    with pytest.raises(ValueError, match="cu_seqlens_k: has 4 entries"):
        jagattn.attention(q, k2, v2, cu, torch.tensor([0, 2, 5, 7]))
    with pytest.raises(ValueError, match="cu_seqlens_k: last value 6"):
        jagattn.attention(q, k2, v2, cu, torch.tensor([0, 2, 6]))
    with pytest.raises(ValueError, match="max_seqlen_k: 3 is smaller"):
        jagattn.attention(q, k2, v2, cu, torch.tensor([0, 2, 7]), 6, 3)


def test_int32_overflow_is_rejected_from_metadata():
    # An expanded (stride-0) tensor with > 2^31 rows costs no memory.
    big = torch.zeros(1, 1, 8).expand(2**31 + 5, 1, 8)
    cu = torch.tensor([0, 2**31 + 5], dtype=torch.int64)
    with pytest.raises(ValueError, match="cu_seqlens_q: total rows .* overflow int32"):
        jagattn.attention(big, big, big, cu)


def test_cu_seqlens_device_mismatch_is_reported():
    q, k, v, cu = _good()
    with pytest.raises(ValueError, match="cu_seqlens_q: is on meta"):
        jagattn.attention(q, k, v, cu.to("meta"))


def test_validation_runs_before_compute_and_leaves_inputs_alone():
    q, k, v, cu = _good()
    before = q.clone()
    with pytest.raises(ValueError):
        jagattn.attention(q, k, v, torch.tensor([0, 4, 11]))
    assert torch.equal(q, before)
