"""The Triton backend of ``attention`` against the reference (SPEC.md sections 1 and 5).

CPU (Triton interpreter, small shapes): forward, lse and dq/dk/dv against the fp64 reference
with the tolerance rule, over jagged batches with empty sequences, length 1, odd lengths,
q/k length mismatch, GQA ratios 1/2/4, causal/window/softcap combinations and Dv != D, in
fp16; fp32 forward only (fp32 with gradients or softcap is refused with a reason). GPU (``gpu`` marker, the device's own Triton): bf16 at production
sizes, determinism, opcheck, torch.compile, and the peer adapters.
"""

from __future__ import annotations

import math
import zlib

import pytest
import torch

import jagattn
from jagattn import testing as T
from jagattn.attention import backends as attention_backends
from jagattn.attention.api import make_inputs
from jagattn.attention.reference import attention_reference
from jagattn.testing import OnCuda

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def _inputs(lens_q, lens_k, hq, hkv, d, dv, *, dtype, seed, device=DEVICE):
    g = T.generator(seed)
    tq, tk = sum(lens_q), sum(lens_k)
    q = T.randn((tq, hq, d), generator=g, dtype=dtype, device=device)
    k = T.randn((tk, hkv, d), generator=g, dtype=dtype, device=device)
    v = T.randn((tk, hkv, dv), generator=g, dtype=dtype, device=device)
    do = T.randn((tq, hq, dv), generator=g, dtype=dtype, device=device)
    dlse = T.randn((hq, tq), generator=g, device=device)
    cu_q = T.cu_seqlens(lens_q, device=device)
    cu_k = T.cu_seqlens(lens_k, device=device)
    return q, k, v, do, dlse, cu_q, cu_k


def _loss(o, lse, do, dlse):
    # lse enters the loss too, so its gradient path (delta - dlse) is checked; -inf rows excluded
    lse_fin = torch.where(torch.isfinite(lse), lse, torch.zeros_like(lse))
    return (o.double() * do.double()).sum() + (lse_fin.double() * dlse.double()).sum()


def _run(fn, q, k, v, do, dlse):
    qq, kk, vv = (t.detach().clone().requires_grad_(True) for t in (q, k, v))
    o, lse = fn(qq, kk, vv)
    _loss(o, lse, do, dlse).backward()
    return o.detach(), lse.detach(), qq.grad, kk.grad, vv.grad


def _compare(
    lens_q,
    lens_k,
    hq,
    hkv,
    d,
    dv,
    *,
    dtype,
    seed,
    causal=False,
    window=(-1, -1),
    softcap=0.0,
    scale=None,
    deterministic=False,
    gold_device="cpu",
    tweak=None,
):
    """Triton vs the fp64 (CPU) or fp32 (GPU) gold reference; lowp = reference in the input dtype.
    ``tweak(q, k, cu_k) -> (q, k)`` reshapes the random inputs (e.g. scores that grow along the keys)."""
    q, k, v, do, dlse, cu_q, cu_k = _inputs(lens_q, lens_k, hq, hkv, d, dv, dtype=dtype, seed=seed)
    if tweak is not None:
        q, k = tweak(q, k, cu_k)
    kw = dict(causal=causal, window=window, softcap=softcap, scale=scale)

    def tri(qq, kk, vv):
        return jagattn.attention(
            qq, kk, vv, cu_q, cu_k, max(lens_q, default=0), max(lens_k, default=0),
            deterministic=deterministic, return_lse=True, backend="triton", **kw,
        )  # fmt: skip

    out = _run(tri, q, k, v, do, dlse)
    gold_dtype = torch.float64 if gold_device == "cpu" else torch.float32
    g = [t.to(gold_device) for t in (q, k, v, do, dlse, cu_q, cu_k)]

    def gold(qq, kk, vv):
        return attention_reference(qq.to(gold_dtype), kk.to(gold_dtype), vv.to(gold_dtype), g[5], g[6], **kw)

    def lowp(qq, kk, vv):
        return attention_reference(qq, kk, vv, g[5], g[6], compute_dtype=dtype, **kw)

    ref = _run(gold, *g[:5])
    low = _run(lowp, *g[:5])
    for name, a, b, c in zip(("o", "lse", "dq", "dk", "dv"), out, ref, low, strict=True):
        T.assert_finite_where(name, a)
        T.check_close(name, a, b, c)
    return out


@pytest.mark.parametrize("ramp", [0.02, 0.3, 3.0])
def test_row_maxima_growing_along_the_keys(ramp):
    # Scores that grow with the key position, so a row's running max rises from key block to key block: by a
    # little (the online softmax may keep an older reference max and let p exceed 1), or by a lot (it must
    # rescale acc and l). Keys get ramp * j along e_0, queries a unit component along it.
    def tweak(q, k, cu_k):
        k = k.clone()
        for b in range(cu_k.numel() - 1):
            lo, hi = int(cu_k[b]), int(cu_k[b + 1])
            k[lo:hi, :, 0] += ramp * torch.arange(hi - lo, device=k.device, dtype=k.dtype)[:, None]
        q = q.clone()
        q[:, :, 0] = 1.0
        return q, k

    lens = [150, 97, 1, 0, 64]
    for causal in (True, False):
        _compare(lens, lens, 2, 1, 16, 16, dtype=torch.float16, seed=41, causal=causal, tweak=tweak)


# ---------------------------------------------------------------------------------------------
# CPU (interpreter) and GPU: feature coverage on small shapes

# (lens_q, lens_k or None for self-attention, hq, hkv, d, dv, options)
CASES = [
    (
        "empties-causal-gqa2",
        T.random_lengths("empties", batch=6, max_len=90, seed=1),
        None,
        4,
        2,
        32,
        32,
        dict(causal=True),
    ),
    ("odd-full-mha", T.random_lengths("odd", batch=4, max_len=100, seed=2), None, 2, 2, 64, 64, {}),
    (
        "odd-causal-gqa4-dv",
        T.random_lengths("odd", batch=5, max_len=80, seed=3),
        None,
        4,
        1,
        32,
        16,
        dict(causal=True),
    ),
    (
        "skewed-window-causal",
        T.random_lengths("skewed", batch=8, max_len=160, seed=4),
        None,
        4,
        2,
        16,
        16,
        dict(causal=True, window=(37, -1)),
    ),
    (
        "uniform-window-twosided",
        T.random_lengths("uniform", batch=3, max_len=120, seed=5),
        None,
        2,
        1,
        32,
        64,
        dict(window=(21, 9)),
    ),
    ("single-rightwindow", [150], None, 2, 2, 16, 32, dict(window=(-1, 5))),
    ("ones-causal", T.random_lengths("ones", batch=5, seed=6), None, 4, 4, 16, 16, dict(causal=True)),
    (
        "softcap-full",
        T.random_lengths("uniform", batch=3, max_len=70, seed=7),
        None,
        4,
        2,
        32,
        32,
        dict(softcap=2.5),
    ),
    (
        "softcap-causal-window-scale",
        T.random_lengths("odd", batch=4, max_len=96, seed=8),
        None,
        4,
        1,
        64,
        32,
        dict(causal=True, window=(30, -1), softcap=4.0, scale=0.3),
    ),
    # q/k length mismatch: bottom-right alignment, rows without keys (lq > lk), empty k
    ("cross-causal", [5, 70, 33, 1, 0, 40], [9, 50, 100, 0, 7, 40], 4, 2, 32, 32, dict(causal=True)),
    ("cross-window", [65, 3, 63], [20, 64, 130], 2, 1, 16, 32, dict(window=(10, 3))),
    ("cross-full-softcap", [17, 0, 64], [1, 33, 65], 4, 4, 32, 16, dict(softcap=1.5)),
]


def _case_id(case):
    return case[0]


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_matches_reference(case):
    name, lens_q, lens_k, hq, hkv, d, dv, opts = case
    lens_k = lens_q if lens_k is None else lens_k
    _compare(
        lens_q, lens_k, hq, hkv, d, dv, dtype=torch.float16, seed=zlib.crc32(name.encode()) % 1000, **opts
    )


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_fp32_forward_or_a_reason(case):
    """fp32: the forward (o, lse) meets the rule; with gradients or softcap the backend refuses
    (its exp2-domain softmax is not within the rule of an fp32 reference there) and auto falls back."""
    name, lens_q, lens_k, hq, hkv, d, dv, opts = case
    lens_k = lens_q if lens_k is None else lens_k
    seed = zlib.crc32(name.encode()) % 1000 + 1
    q, k, v, _, _, cu_q, cu_k = _inputs(lens_q, lens_k, hq, hkv, d, dv, dtype=torch.float32, seed=seed)
    args = (q, k, v, cu_q, cu_k, max(lens_q, default=0), max(lens_k, default=0))

    def call(backend, *qkv):
        return jagattn.attention(*qkv, *args[3:], return_lse=True, backend=backend, **opts)

    grad_qkv = [t.clone().requires_grad_(True) for t in (q, k, v)]
    with pytest.raises(jagattn.NotSupportedError, match="fp32 with gradients or softcap"):
        call("triton", *grad_qkv)
    assert jagattn.explain("attention", *grad_qkv, *args[3:], **opts).chosen != "triton"
    if opts.get("softcap"):
        with (
            torch.no_grad(),
            pytest.raises(jagattn.NotSupportedError, match="fp32 with gradients or softcap"),
        ):
            call("triton", q, k, v)
        return
    with torch.no_grad():
        o, lse = call("triton", q, k, v)
        ref = attention_reference(*(t.double() for t in (q, k, v)), cu_q, cu_k, **opts)
        low = attention_reference(q, k, v, cu_q, cu_k, **opts)
    T.check_close("o", o, ref[0], low[0])
    fin = torch.isfinite(ref[1])
    assert torch.equal(torch.isfinite(lse), fin)
    T.check_close(
        "lse", torch.where(fin, lse, 0.0), torch.where(fin, ref[1], 0.0), torch.where(fin, low[1], 0.0)
    )


@pytest.mark.parametrize("mode", ["kernel", "atomic"])
def test_dq_modes_match_reference(mode, monkeypatch):
    """Both dQ paths (separate kernel / fp32 atomics inside the dK/dV kernel) meet the rule."""
    monkeypatch.setenv("JAGATTN_ATTN_DQ", mode)
    lens = T.random_lengths("skewed", batch=6, max_len=130, seed=11)
    _compare(lens, lens, 4, 2, 32, 32, dtype=torch.float16, seed=12, causal=True, window=(50, -1))


def test_deterministic_is_bit_identical():
    lens = T.random_lengths("uniform", batch=3, max_len=100, seed=13)
    q, k, v, do, dlse, cu, _ = _inputs(lens, lens, 4, 2, 32, 32, dtype=torch.float16, seed=14)

    def fn(qq, kk, vv):
        return jagattn.attention(
            qq, kk, vv, cu, causal=True, deterministic=True, return_lse=True, backend="triton"
        )

    a = _run(fn, q, k, v, do, dlse)
    b = _run(fn, q, k, v, do, dlse)
    for name, x, y in zip(("o", "lse", "dq", "dk", "dv"), a, b, strict=True):
        assert torch.equal(x, y), name


def test_rows_without_keys_are_zero_with_zero_gradients():
    # lq > lk causal: the first lq - lk rows see no key; one sequence has no key at all
    lens_q, lens_k = [40, 6, 0], [25, 0, 3]
    q, k, v, do, dlse, cu_q, cu_k = _inputs(lens_q, lens_k, 2, 1, 16, 16, dtype=torch.float16, seed=15)

    def fn(qq, kk, vv):
        return jagattn.attention(qq, kk, vv, cu_q, cu_k, causal=True, return_lse=True, backend="triton")

    o, lse, dq, dk, dv = _run(fn, q, k, v, do, dlse)
    empty_rows = list(range(0, 15)) + list(range(40, 46))
    assert torch.all(o[empty_rows] == 0)
    assert torch.all(lse[:, empty_rows] == -math.inf)
    assert torch.all(dq[empty_rows] == 0)
    for name, t in (("o", o), ("dq", dq), ("dk", dk), ("dv", dv)):
        T.assert_finite_where(name, t)
    assert torch.isfinite(lse[:, 15:40]).all()


def test_strided_heads_and_inputs_unchanged():
    """q/k/v sliced out of one packed qkv tensor (strided rows); inputs are never mutated."""
    lens = T.random_lengths("odd", batch=3, max_len=70, seed=16)
    g = T.generator(17)
    qkv = T.randn((sum(lens), 3, 2, 32), generator=g, device=DEVICE)
    q, k, v = qkv[:, 0], qkv[:, 1], qkv[:, 2]
    cu = T.cu_seqlens(lens, device=DEVICE)
    before = qkv.clone()
    o = jagattn.attention(q, k, v, cu, causal=True, backend="triton")
    ref, _ = attention_reference(q.double(), k.double(), v.double(), cu, cu, causal=True)
    low, _ = attention_reference(q, k, v, cu, cu, causal=True)
    T.check_close("o", o, ref, low)
    assert torch.equal(qkv, before)


def test_max_seqlen_is_never_used_for_indexing():
    """A max_seqlen smaller than the real lengths (a caller bug) must not change what is read."""
    from jagattn.attention import ops  # noqa: F401

    lens = [70, 3, 129]
    q, k, v, _, _, cu, _ = _inputs(lens, lens, 2, 1, 16, 16, dtype=torch.float32, seed=18)
    args = (q, k, v, cu, cu)
    good = torch.ops.jagattn.attention_fwd(*args, 129, 129, -1, 0, 0.25, 0.0, False)
    bad = torch.ops.jagattn.attention_fwd(*args, 4, 4, -1, 0, 0.25, 0.0, False)
    assert torch.equal(good[0], bad[0]) and torch.equal(good[1], bad[1])


def test_huge_window_sides_at_the_op_level():
    """Window sides near 2**31 - 1 reaching the op directly (as with symbolic shapes, where
    ``make_inputs`` cannot rewrite them) bound nothing: same result as -1 (they overflowed int32
    positions in the kernels before ``window_args`` capped them), forward and backward."""
    from jagattn.attention import ops  # noqa: F401

    big = 2**31 - 1
    q, k, v, _, _, cu, _ = _inputs([37, 5, 70], [37, 5, 70], 2, 1, 16, 16, dtype=torch.float16, seed=19)
    args = (q, k, v, cu, cu, 70, 70)
    gen = T.generator(20)  # the output gradients: seeded, so a failure reproduces
    for unbounded, huge in (((-1, -1), (big, big)), ((-1, 0), (big, 0)), ((-1, -1), (-1, big))):
        want = torch.ops.jagattn.attention_fwd(*args, *unbounded, 0.25, 0.0, False)
        got = torch.ops.jagattn.attention_fwd(*args, *huge, 0.25, 0.0, False)
        assert torch.equal(want[0], got[0]) and torch.equal(want[1], got[1]), huge
        do = T.randn(tuple(want[0].shape), generator=gen, dtype=want[0].dtype, device=want[0].device)
        common = (q, k, v, want[0], want[1], None, cu, cu, 70, 70)
        g_want = torch.ops.jagattn.attention_bwd(do, *common, *unbounded, 0.25, 0.0, False)
        g_got = torch.ops.jagattn.attention_bwd(do, *common, *huge, 0.25, 0.0, False)
        for a, b in zip(g_want, g_got, strict=True):
            assert torch.equal(a, b), huge


def test_empty_batch():
    cu = torch.zeros(2, dtype=torch.int32, device=DEVICE)
    q = torch.randn(0, 2, 16, device=DEVICE, dtype=torch.float16, requires_grad=True)
    k = torch.randn(0, 1, 16, device=DEVICE, dtype=torch.float16, requires_grad=True)
    v = torch.randn(0, 1, 16, device=DEVICE, dtype=torch.float16, requires_grad=True)
    o, lse = jagattn.attention(q, k, v, cu, max_seqlen_q=0, return_lse=True, backend="triton")
    assert o.shape == (0, 2, 16) and lse.shape == (2, 0)
    o.sum().backward()
    assert q.grad.shape == q.shape and k.grad.shape == k.shape


def test_reasons_are_metadata_only_and_honest():
    be = next(b for b in attention_backends.BACKENDS if b.name == "triton")
    cu = T.cu_seqlens([3, 5])
    q64 = torch.randn(8, 2, 16, dtype=torch.float64)
    ex = jagattn.explain("attention", q64, q64, q64, cu)
    row = next(r for r in ex.rows if r.backend == "triton")
    assert not row.chosen and any("fp64" in r for r in row.reasons)
    big = torch.randn(8, 2, 320)
    ex = jagattn.explain("attention", big, big, big, cu)
    row = next(r for r in ex.rows if r.backend == "triton")
    assert any("head dims" in r for r in row.reasons)
    ok = torch.randn(8, 2, 16, dtype=torch.float16, device=DEVICE)
    inputs = make_inputs(ok, ok, ok, cu.to(DEVICE), window=(3, 2), softcap=1.0)
    assert be.not_supported_reasons(inputs) == []
    with pytest.raises(jagattn.NotSupportedError, match="fp64"):
        jagattn.attention(q64, q64, q64, cu, backend="triton")


def test_unused_lse_reaches_the_backward_as_none(monkeypatch):
    # return_lse=False: autograd passes None for lse's gradient (no zero-filled [Hq, Tq] buffer) and
    # the delta pass takes HAS_DLSE=False; the gradients equal those of an explicit zero dlse bit for bit
    from jagattn.attention.triton import bwd as bwd_mod

    q, k, v, do, _, cu, _ = _inputs(
        [37, 0, 70, 5], [37, 0, 70, 5], 4, 2, 16, 16, dtype=torch.float16, seed=23
    )
    seen = []
    inner = bwd_mod.attention_bwd

    def spy(*args):
        seen.append(args[6] is None)
        return inner(*args)

    monkeypatch.setattr(bwd_mod, "attention_bwd", spy)

    def grads(return_lse):
        qq, kk, vv = (t.detach().clone().requires_grad_(True) for t in (q, k, v))
        out = jagattn.attention(
            qq, kk, vv, cu, cu, 70, 70, causal=True, return_lse=return_lse, backend="triton"
        )
        loss = (out[0] * do).sum() + (out[1] * 0.0).sum() if return_lse else (out * do).sum()
        return torch.autograd.grad(loss, (qq, kk, vv))

    unused, zero_dlse = grads(False), grads(True)
    assert seen == [True, False]
    for name, a, b in zip("qkv", unused, zero_dlse, strict=True):
        assert torch.equal(a, b), f"d{name}"


def test_ops_schema_and_autograd_registration():
    """Full opcheck needs a GPU (fake tracing cannot run the interpreter); see the gpu test."""
    from jagattn.attention import ops  # noqa: F401

    lens = [3, 40, 0, 17]
    q, k, v, do, dlse, cu, _ = _inputs(lens, lens, 4, 2, 32, 16, dtype=torch.float32, seed=19)
    args = (q.requires_grad_(), k.requires_grad_(), v.requires_grad_(), cu, cu, 40, 40, -1, 0, 0.2, 0.0, True)
    utils = ("test_schema", "test_autograd_registration")
    torch.library.opcheck(torch.ops.jagattn.attention_fwd.default, args, test_utils=utils)
    o, lse = torch.ops.jagattn.attention_fwd(*args)
    bwd_args = (do, q.detach(), k.detach(), v.detach(), o.detach(), lse.detach(), dlse, cu, cu, 40, 40, -1, 0, 0.2,
                0.0, True)  # fmt: skip
    torch.library.opcheck(torch.ops.jagattn.attention_bwd.default, bwd_args, test_utils=utils)


# ---------------------------------------------------------------------------------------------
# GPU: production sizes in bf16 on the device's real Triton


def _lengths_total(total: int, mean: int, seed: int) -> list[int]:
    import random

    rng = random.Random(seed)
    out = []
    while sum(out) < total:
        out.append(rng.randint(mean // 2, (3 * mean) // 2))
    out[-1] -= sum(out) - total
    return [n for n in out if n > 0]


GPU_CASES = [
    # (name, d, dv, hq, hkv, mean, options)
    ("d64-causal-gqa4", 64, 64, 16, 4, 2048, dict(causal=True)),
    ("d128-causal-gqa4", 128, 128, 16, 4, 2048, dict(causal=True)),
    ("d128-full-mha", 128, 128, 16, 16, 1024, {}),
    ("d128-window-softcap", 128, 128, 16, 4, 2048, dict(causal=True, window=(512, -1), softcap=30.0)),
    ("d256-causal-gqa2", 256, 256, 8, 4, 2048, dict(causal=True)),
    ("d192-dv128-causal", 192, 128, 8, 2, 1024, dict(causal=True)),
    # the wide forward tile (128x128, fwd.KEYS_WIDE): causal rows seeing ~4k keys on average, non-causal ~2k
    ("d128-causal-wide-gqa4", 128, 128, 16, 4, 8192, dict(causal=True)),
    ("d128-full-wide", 128, 128, 8, 8, 2560, {}),
]


@pytest.mark.gpu
@pytest.mark.parametrize("case", GPU_CASES, ids=_case_id)
def test_gpu_bf16_production_sizes(case):
    name, d, dv, hq, hkv, mean, opts = case
    lens = _lengths_total(32768, mean, seed=len(name))
    _compare(lens, lens, hq, hkv, d, dv, dtype=torch.bfloat16, seed=21, gold_device="cuda", **opts)


@pytest.mark.gpu
@pytest.mark.parametrize("d", [64, 128, 256])
@pytest.mark.parametrize("mean", [1024, 8192])
def test_gpu_fp32_forward(d, mean):
    """fp32 forward (no gradients) at production sizes: every tile the schedule can pick for fp32 must
    fit the shared memory at 4 bytes per element (the prune counted 2 before session 14)."""
    lens = _lengths_total(16384, mean, seed=d + mean)
    q, k, v, _, _, cu, _ = _inputs(lens, lens, 8, 4, d, d, dtype=torch.float32, seed=25)
    with torch.no_grad():
        o, lse = jagattn.attention(q, k, v, cu, cu, max(lens), max(lens), causal=True, return_lse=True,
                                   backend="triton")  # fmt: skip
        ref = attention_reference(*(t.double() for t in (q, k, v)), cu, cu, causal=True)
        low = attention_reference(q, k, v, cu, cu, causal=True)
    T.check_close("o", o, ref[0], low[0])
    assert torch.isfinite(ref[1]).all() and torch.isfinite(lse).all()  # no empty sequence here
    T.check_close("lse", lse, ref[1], low[1])


@pytest.mark.gpu
@pytest.mark.parametrize("mode", ["kernel", "atomic"])
def test_gpu_dq_modes(mode, monkeypatch):
    monkeypatch.setenv("JAGATTN_ATTN_DQ", mode)
    lens = _lengths_total(16384, 1024, seed=5) + [0, 1, 63, 65]
    _compare(lens, lens, 16, 4, 128, 128, dtype=torch.bfloat16, seed=22, gold_device="cuda", causal=True)


@pytest.mark.gpu
def test_gpu_cross_lengths_fp16():
    lens_q = [5, 700, 333, 1, 0, 4000, 129]
    lens_k = [9, 500, 1000, 0, 7, 4000, 64]
    _compare(lens_q, lens_k, 8, 2, 64, 64, dtype=torch.float16, seed=23, gold_device="cuda", causal=True,
             window=(300, -1))  # fmt: skip


def test_tma_only_where_it_applies(monkeypatch):
    # fwd.use_tma's and bwd.dq_use_tma's guards on any machine (the GPU cases: test_gpu_forward_tma_loads,
    # test_gpu_dq_tma_loads): never for CPU tensors; for a stand-in that reads as a CUDA tensor, TMA where the
    # rows are 16-byte aligned, never under the interpreter, for a view one element off alignment, or with the
    # kernel's own switch (JAGATTN_ATTN_FWD_TMA=0, JAGATTN_ATTN_DQ_TMA=0) at 0
    from jagattn._core import tma
    from jagattn.attention.triton import bwd, fwd

    k = torch.zeros(8, 2, 64, dtype=torch.bfloat16)
    k_off = torch.zeros(k.numel() + 1, dtype=k.dtype)[1:].view_as(k)
    decide = {"fwd": lambda kk: fwd.use_tma(kk, kk), "dq": lambda kk: bwd.dq_use_tma(kk, kk)}
    assert fwd.FWD_TMA == "auto" and bwd.DQ_TMA == "auto"
    assert not any(f(k) for f in decide.values())
    has_desc = hasattr(fwd.tl, "make_tensor_descriptor")
    # installs nothing in the test's thread
    monkeypatch.setattr(tma, "scratch_allocator_ready", lambda: True)
    monkeypatch.setattr(tma, "interpreter_enabled", lambda: False)
    assert all(f(OnCuda(k)) == has_desc for f in decide.values())
    assert not any(f(OnCuda(k_off)) for f in decide.values())
    for off, other, switch in (("fwd", "dq", (fwd, "FWD_TMA")), ("dq", "fwd", (bwd, "DQ_TMA"))):
        with monkeypatch.context() as m:  # each switch turns off its own kernel's TMA only
            m.setattr(*switch, "0")
            assert not decide[off](OnCuda(k)) and decide[other](OnCuda(k)) == has_desc
    monkeypatch.setattr(tma, "interpreter_enabled", lambda: True)
    assert not any(f(OnCuda(k)) for f in decide.values())


def test_dkdv_tma_only_where_it_applies(monkeypatch):
    # bwd.dkdv_use_tma (q / dO of the dK/dV loop through one descriptor over the packed [rows, heads * D] view):
    # _core.tma.tma_loads_ok's guards plus head dims equal to their blocks and every head inside one row; the GPU
    # case is test_gpu_dkdv_tma_loads
    from jagattn._core import tma
    from jagattn.attention.triton import bwd, fwd

    has_desc = hasattr(fwd.tl, "make_tensor_descriptor")
    q = torch.zeros(8, 4, 64, dtype=torch.bfloat16)
    assert bwd.DKDV_TMA == "auto"
    assert not bwd.dkdv_use_tma(q, q, 64, 64, 64, 64)  # CPU tensors
    monkeypatch.setattr(tma, "scratch_allocator_ready", lambda: True)  # installs nothing in the test's thread
    monkeypatch.setattr(tma, "interpreter_enabled", lambda: False)
    ok = OnCuda(q)
    assert bwd.dkdv_use_tma(ok, ok, 64, 64, 64, 64) == has_desc
    assert not bwd.dkdv_use_tma(ok, ok, 48, 64, 64, 64)  # a padded head dim would read the next head
    assert not bwd.dkdv_use_tma(ok, ok, 64, 48, 64, 64)
    heads_outer = OnCuda(
        torch.zeros(4, 8, 64, dtype=q.dtype).transpose(0, 1)
    )  # [T, H, D] view, heads outermost
    assert not bwd.dkdv_use_tma(heads_outer, ok, 64, 64, 64, 64)
    expanded = OnCuda(torch.ones(1, 1, 1, dtype=q.dtype).expand(8, 4, 64))  # d(sum) arrives with stride 0
    assert not bwd.dkdv_use_tma(ok, expanded, 64, 64, 64, 64)
    wide_rows = OnCuda(torch.zeros(8, 5, 64, dtype=q.dtype)[:, :4])  # rows wider than the heads: fine
    assert bwd.dkdv_use_tma(wide_rows, ok, 64, 64, 64, 64) == has_desc
    off = OnCuda(torch.zeros(q.numel() + 1, dtype=q.dtype)[1:].view_as(q))
    assert not bwd.dkdv_use_tma(off, ok, 64, 64, 64, 64)
    monkeypatch.setattr(bwd, "DKDV_TMA", "0")
    assert not bwd.dkdv_use_tma(ok, ok, 64, 64, 64, 64)


@pytest.mark.gpu
def test_gpu_forward_tma_loads(monkeypatch):
    # fwd.use_tma: K/V through TMA descriptors on aligned inputs (bitwise the pointer loads: both load the same
    # values, zeros past the sequence and the head dim), pointer loads for a misaligned view, and a thread
    # without Triton's scratch allocator set (use_tma installs it there).
    import threading

    from jagattn.attention.triton import fwd

    lens = _lengths_total(16384, 2048, seed=7) + [0, 1, 65]
    q, k, v, _, _, cu, _ = _inputs(lens, lens, 8, 2, 96, 64, dtype=torch.bfloat16, seed=26)
    launched = []
    real = fwd.use_tma
    monkeypatch.setattr(fwd, "use_tma", lambda kk, vv: launched.append(real(kk, vv)) or launched[-1])
    monkeypatch.setenv("JAGATTN_LAUNCH_REPLAY", "0")  # counts the launcher's decisions, which a replay skips

    def run(kk, vv):
        with torch.no_grad():
            return jagattn.attention(q, kk, vv, cu, cu, max(lens), max(lens), causal=True, return_lse=True,
                                     backend="triton")  # fmt: skip

    got = {}
    worker = threading.Thread(target=lambda: got.setdefault("thread", run(k, v)))
    worker.start()
    worker.join()
    tma = run(k, v)
    monkeypatch.setattr(fwd, "FWD_TMA", "0")
    ptr = run(k, v)
    assert launched == [True, True, False]
    for a, b, c in zip(tma, ptr, got["thread"], strict=True):
        assert torch.equal(a, b) and torch.equal(a, c)
    # a K/V view one element off 16-byte alignment: pointer loads, same results
    monkeypatch.setattr(fwd, "FWD_TMA", "auto")
    k_off = torch.empty(k.numel() + 1, dtype=k.dtype, device=k.device)[1:].view_as(k).copy_(k)
    off = run(k_off, v)
    assert launched[-1] is False
    for a, b in zip(off, ptr, strict=True):
        assert torch.equal(a, b)


@pytest.mark.gpu
@pytest.mark.parametrize("group, d, dv", [(4, 128, 128), (1, 64, 128), (2, 96, 64)])
def test_gpu_dkdv_tma_loads(monkeypatch, group, d, dv):
    # bwd.dkdv_use_tma: q / dO of the dK/dV loop through TMA descriptors, bitwise the same dq/dk/dv as the
    # clamped pointer loads (rows past a sequence read zeros, which the padding rows' lse2 = +inf cancels), on a
    # batch with empty, length-1 and partial-block sequences, GQA, windows; D = 96 (a padded block) keeps the
    # pointer loads. Deterministic or not, causal, windowed and full.
    from jagattn.attention.triton import bwd, bwd_gluon

    monkeypatch.setattr(bwd_gluon, "GLUON_SWITCH", "0")  # this test is about the Triton kernel's loads
    lens = [0, 1, 65] + _lengths_total(12288, 2048, seed=9) + [129, 0]
    lens_k = [x + (3 if i % 3 == 1 else 0) for i, x in enumerate(lens)]  # q/k length mismatch (bottom-right)
    q, k, v, do, dlse, cuq, cuk = _inputs(lens, lens_k, 8, 8 // group, d, dv, dtype=torch.bfloat16, seed=28)
    launched = []
    real = bwd.dkdv_use_tma
    monkeypatch.setattr(bwd, "dkdv_use_tma", lambda *a: launched.append(real(*a)) or launched[-1])

    for kw in (dict(causal=True, deterministic=True), dict(causal=True, window=(300, 0)), dict(causal=False)):

        def fn(qq, kk, vv, kw=kw):
            return jagattn.attention(qq, kk, vv, cuq, cuk, max(lens), max(lens_k), return_lse=True,
                                     backend="triton", **kw)  # fmt: skip

        launched.clear()
        monkeypatch.setattr(bwd, "DKDV_TMA", "auto")
        tma = _run(fn, q, k, v, do, dlse)
        monkeypatch.setattr(bwd, "DKDV_TMA", "0")
        ptr = _run(fn, q, k, v, do, dlse)
        assert launched == [d in (64, 128), False], (kw, launched)
        for name, a, b in zip(("o", "lse", "dq", "dk", "dv"), tma, ptr, strict=True):
            assert torch.equal(a, b), (kw, name)


def test_gluon_only_where_it_applies(monkeypatch):
    # bwd_gluon.use_gluon: the Gluon dK/dV kernel (Hopper, eager) only where its guards hold; the GPU cases are
    # test_gpu_gluon*
    from jagattn._core import tma
    from jagattn.attention.triton import bwd_gluon

    q = torch.zeros(8, 4, 128, dtype=torch.bfloat16)
    kv = torch.zeros(8, 2, 128, dtype=torch.bfloat16)
    assert not bwd_gluon.use_gluon(q, kv, kv, q, 0.0, False)  # CPU tensors
    if not bwd_gluon.GLUON:
        pytest.skip("this Triton has no Gluon Hopper API: the Triton kernel always runs")
    monkeypatch.setattr(tma, "scratch_allocator_ready", lambda: True)
    monkeypatch.setattr(tma, "interpreter_enabled", lambda: False)
    from jagattn._core import gluon as core_gluon

    monkeypatch.setattr(core_gluon, "interpreter_enabled", lambda: False)
    cap = {"v": (9, 0)}
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: cap["v"])
    has_desc = hasattr(tma.tl, "make_tensor_descriptor")
    ok_q, ok_kv = OnCuda(q), OnCuda(kv)
    assert bwd_gluon.use_gluon(ok_q, ok_kv, ok_kv, ok_q, 0.0, False) == has_desc
    assert not bwd_gluon.use_gluon(ok_q, ok_kv, ok_kv, ok_q, 30.0, False)  # softcap
    assert not bwd_gluon.use_gluon(ok_q, ok_kv, ok_kv, ok_q, 0.0, True)  # JAGATTN_ATTN_DQ=atomic
    for d in (32, 96, 256):
        qd, kd = OnCuda(torch.zeros(8, 4, d, dtype=q.dtype)), OnCuda(torch.zeros(8, 2, d, dtype=q.dtype))
        assert not bwd_gluon.use_gluon(qd, kd, kd, qd, 0.0, False), d
    q32, kv32 = OnCuda(q.float()), OnCuda(kv.float())
    assert not bwd_gluon.use_gluon(q32, kv32, kv32, q32, 0.0, False)  # fp32: the tf32 Triton kernel
    mixed_v = OnCuda(torch.zeros(8, 2, 64, dtype=q.dtype))
    mixed_do = OnCuda(torch.zeros(8, 4, 64, dtype=q.dtype))
    assert bwd_gluon.use_gluon(ok_q, ok_kv, mixed_v, mixed_do, 0.0, False) == has_desc  # Dv != D
    heads_outer = OnCuda(torch.zeros(4, 8, 128, dtype=q.dtype).transpose(0, 1))
    assert not bwd_gluon.use_gluon(heads_outer, ok_kv, ok_kv, ok_q, 0.0, False)
    off = OnCuda(torch.zeros(kv.numel() + 1, dtype=q.dtype)[1:].view_as(kv))
    assert not bwd_gluon.use_gluon(ok_q, off, ok_kv, ok_q, 0.0, False)  # K not 16-byte aligned
    for c in ((8, 0), (10, 0), (9, 1)):  # wgmma is sm_90 only
        cap["v"] = c
        assert not bwd_gluon.use_gluon(ok_q, ok_kv, ok_kv, ok_q, 0.0, False), c
    cap["v"] = (9, 0)
    monkeypatch.setattr(bwd_gluon, "GLUON_SWITCH", "0")
    assert not bwd_gluon.use_gluon(ok_q, ok_kv, ok_kv, ok_q, 0.0, False)


@pytest.mark.gpu
@pytest.mark.parametrize(
    "dtype, group, d, dv",
    [(torch.bfloat16, 4, 128, 128), (torch.float16, 1, 64, 64), (torch.bfloat16, 2, 64, 128), (torch.bfloat16, 8, 128, 64)],
)  # fmt: skip
def test_gpu_gluon(monkeypatch, dtype, group, d, dv):
    # the Gluon dK/dV kernel (bwd_gluon.py) is taken on Hopper for these head dims and meets the SPEC rule against
    # the fp32 reference on a batch with empty, length-1 and partial-block sequences, q/k length mismatch, GQA,
    # causal / windowed / full, with and without a gradient on lse; every output is the Triton kernel's bit for bit
    # (the same products in the same order: what keeps eager and torch.compile, which runs the Triton kernel, equal)
    from jagattn.attention.triton import bwd, bwd_gluon

    if torch.cuda.get_device_capability() != (9, 0) or not bwd_gluon.GLUON:
        pytest.skip("the Gluon dK/dV kernel runs on compute capability 9.0 only")
    lens = [0, 1, 65] + _lengths_total(12288, 2048, seed=11) + [129, 0, 63]
    lens_k = [x + (3 if i % 3 == 1 else 0) for i, x in enumerate(lens)]  # q/k length mismatch (bottom-right)
    taken = []
    real = bwd.use_gluon
    monkeypatch.setattr(bwd, "use_gluon", lambda *a: taken.append(real(*a)) or taken[-1])
    q, k, v, do, dlse, cuq, cuk = _inputs(lens, lens_k, 8, 8 // group, d, dv, dtype=dtype, seed=29)
    for kw in (
        dict(causal=True, deterministic=True),
        dict(causal=True, window=(300, 0)),
        dict(window=(100, 50)),
        dict(causal=False),
    ):
        taken.clear()
        monkeypatch.setattr(bwd_gluon, "GLUON_SWITCH", "auto")
        got = _compare(lens, lens_k, 8, 8 // group, d, dv, dtype=dtype, seed=29, gold_device="cuda", **kw)
        assert taken == [True], (kw, taken)

        def fn(qq, kk, vv, kw=kw):
            return jagattn.attention(qq, kk, vv, cuq, cuk, max(lens), max(lens_k), return_lse=True,
                                     backend="triton", **kw)  # fmt: skip

        monkeypatch.setattr(bwd_gluon, "GLUON_SWITCH", "0")
        tri = _run(fn, q, k, v, do, dlse)
        assert taken[-1] is False
        for name, a, b in zip(("o", "lse", "dq", "dk", "dv"), got, tri, strict=True):
            assert torch.equal(a, b), (kw, name)
    # no gradient on lse (HAS_DLSE off): delta = rowsum(o * dO) alone
    monkeypatch.setattr(bwd_gluon, "GLUON_SWITCH", "auto")
    taken.clear()
    grads = {}
    for name, fn in (
        ("gluon", lambda qq, kk, vv: jagattn.attention(qq, kk, vv, cuq, cuk, max(lens), max(lens_k), causal=True,
                                                        backend="triton")),
        ("gold", lambda qq, kk, vv: attention_reference(qq.float(), kk.float(), vv.float(), cuq, cuk,
                                                         causal=True)[0]),
        ("low", lambda qq, kk, vv: attention_reference(qq, kk, vv, cuq, cuk, causal=True, compute_dtype=dtype)[0]),
    ):  # fmt: skip
        qq, kk, vv = (t.detach().clone().requires_grad_(True) for t in (q, k, v))
        (fn(qq, kk, vv).double() * do.double()).sum().backward()
        grads[name] = (qq.grad, kk.grad, vv.grad)
    assert taken == [True]
    for i, name in enumerate(("dq", "dk", "dv")):
        T.check_close(name, grads["gluon"][i], grads["gold"][i], grads["low"][i])


@pytest.mark.gpu
def test_gpu_gluon_strided_and_deterministic(monkeypatch):
    # q / k / v as head slices of wider packed tensors (the descriptors span [rows, stride(0)]; every head inside
    # one row), two runs bit-identical, and the Triton kernel where the guards refuse (softcap, D = 96)
    from jagattn.attention.triton import bwd, bwd_gluon

    if torch.cuda.get_device_capability() != (9, 0) or not bwd_gluon.GLUON:
        pytest.skip("the Gluon dK/dV kernel runs on compute capability 9.0 only")
    taken = []
    real = bwd.use_gluon
    monkeypatch.setattr(bwd, "use_gluon", lambda *a: taken.append(real(*a)) or taken[-1])
    monkeypatch.setenv("JAGATTN_LAUNCH_REPLAY", "0")  # counts the launcher's decisions, which a replay skips
    lens = [7, 0, 1000, 1, 333, 64, 2049]
    t = sum(lens)
    cu = T.cu_seqlens(lens, device=DEVICE)
    g = T.generator(31)
    qkv = T.randn((t, 16 + 4 + 4, 128), generator=g, dtype=torch.bfloat16, device=DEVICE)
    q, k, v = qkv[:, :16], qkv[:, 16:20], qkv[:, 20:]
    do = T.randn((t, 16, 128), generator=g, dtype=torch.bfloat16, device=DEVICE)
    dlse = T.randn((16, t), generator=g, device=DEVICE)

    def fn(qq, kk, vv):
        return jagattn.attention(qq, kk, vv, cu, cu, max(lens), max(lens), causal=True, return_lse=True,
                                 backend="triton")  # fmt: skip

    a = _run(fn, q, k, v, do, dlse)
    b = _run(fn, q, k, v, do, dlse)
    assert taken == [True, True]
    for name, x, y in zip(("o", "lse", "dq", "dk", "dv"), a, b, strict=True):
        assert torch.equal(x, y), name
    ref = _run(
        lambda qq, kk, vv: attention_reference(qq.float(), kk.float(), vv.float(), cu, cu, causal=True),
        q, k, v, do, dlse,
    )  # fmt: skip
    low = _run(
        lambda qq, kk, vv: attention_reference(qq, kk, vv, cu, cu, causal=True, compute_dtype=torch.bfloat16),
        q, k, v, do, dlse,
    )  # fmt: skip
    for name, x, r, lw in zip(("o", "lse", "dq", "dk", "dv"), a, ref, low, strict=True):
        T.check_close(name, x, r, lw)
    taken.clear()
    _compare(lens, lens, 8, 2, 96, 96, dtype=torch.bfloat16, seed=32, gold_device="cuda", causal=True)
    _compare(lens, lens, 8, 2, 128, 128, dtype=torch.bfloat16, seed=32, gold_device="cuda", causal=True,
             softcap=20.0)  # fmt: skip
    assert taken == [False, False]


def _check_isolated(lens, hq, hkv, d, device, tag, dtype=torch.bfloat16):
    # inf / NaN in sequence 1's q, k, v, dO never reaches another sequence's o, lse, dq, dk, dv: bit for bit those of
    # the same batch with sequence 1 finite (causal, full and windowed)
    cu = T.cu_seqlens(lens, device=device)
    q, k, v, do, _, _, _ = _inputs(lens, lens, hq, hkv, d, d, dtype=dtype, seed=5, device=device)
    n1 = lens[1]
    (qb, kb, vb, dob), keep = T.poison_one_sequence(
        (q, k, v, do), lens, 1, ((3, math.inf), (n1 - 7, -math.inf), (0, math.nan), (n1 - 1, math.inf))
    )
    for kw in (dict(causal=True), dict(causal=False), dict(window=(7, 2))):
        runs = []
        for qq, kk, vv, dd in ((q, k, v, do), (qb, kb, vb, dob)):
            qq, kk, vv = (t.detach().clone().requires_grad_(True) for t in (qq, kk, vv))
            o, lse = jagattn.attention(qq, kk, vv, cu, cu, max(lens), max(lens), return_lse=True, backend="triton",
                                       **kw)  # fmt: skip
            o.backward(dd)
            runs.append((o.detach(), lse.detach().t(), qq.grad, kk.grad, vv.grad))
        T.assert_isolated(*runs, ("o", "lse", "dq", "dk", "dv"), keep, "o", (kw, tag))


def test_triton_nonfinite_sequence_isolated():
    # the Triton kernels' masked loads (partial blocks on both sides of the poisoned sequence); fp16: under the
    # interpreter bf16 runs the fp32 kernels (_core/precision.fp32_route)
    _check_isolated([20, 13, 37, 8], 2, 1, 16, DEVICE, "small", torch.float16)


@pytest.mark.gpu
@pytest.mark.parametrize("switch", ["auto", "0"])
def test_gpu_nonfinite_sequence_isolated(monkeypatch, switch):
    # on the device: the Gluon dK/dV kernel (auto) or the Triton one (0). The Gluon kernel's host-side descriptors span
    # the whole tensor, so a sequence's last, partial query block holds the next sequence's rows: masking their
    # scores is not enough (a masked zero times an inf row is NaN in dV += P^T dO, dK += dS^T Q): they are zeroed
    from jagattn.attention.triton import bwd_gluon

    monkeypatch.setattr(bwd_gluon, "GLUON_SWITCH", switch)
    _check_isolated([100, 77, 130, 64], 4, 2, 128, "cuda", switch)


@pytest.mark.gpu
def test_gpu_dq_tma_loads(monkeypatch):
    # bwd.dq_use_tma: the dQ kernel's K/V through TMA descriptors on aligned inputs, bitwise the same
    # dq/dk/dv as the pointer loads; also when the backward launches from a fresh thread without Triton's
    # scratch allocator (dq_use_tma installs it there, as in autograd's backward thread), and pointer loads
    # for a misaligned view.
    import threading

    from triton.runtime import _allocation

    from jagattn.attention.triton import bwd

    lens = _lengths_total(16384, 2048, seed=8) + [0, 1, 65]
    q, k, v, do, dlse, cu, _ = _inputs(lens, lens, 8, 2, 96, 64, dtype=torch.bfloat16, seed=27)
    launched = []
    real = bwd.dq_use_tma
    monkeypatch.setattr(bwd, "dq_use_tma", lambda kk, vv: launched.append(real(kk, vv)) or launched[-1])

    def fn(qq, kk, vv):
        return jagattn.attention(qq, kk, vv, cu, cu, max(lens), max(lens), causal=True, deterministic=True,
                                 return_lse=True, backend="triton")  # fmt: skip

    tma = _run(fn, q, k, v, do, dlse)
    monkeypatch.setattr(bwd, "DQ_TMA", "0")
    ptr = _run(fn, q, k, v, do, dlse)
    assert launched == [True, False]
    for name, a, b in zip(("o", "lse", "dq", "dk", "dv"), tma, ptr, strict=True):
        assert torch.equal(a, b), name

    # the backward launcher itself, called in a fresh thread (no allocator set there) and in this one
    o, lse = tma[:2]

    def direct(kk):
        n = max(lens)
        return bwd.attention_bwd(do, q, kk, v, o, lse, dlse, cu, cu, n, n, -1, 0, 96**-0.5, 0.0, True)

    got = {}

    def worker():
        got["fresh"] = isinstance(_allocation._allocator.get(), _allocation.NullAllocator)
        got["grads"] = direct(k)

    monkeypatch.setattr(bwd, "DQ_TMA", "auto")
    thread = threading.Thread(target=worker)
    thread.start()
    thread.join()
    assert got["fresh"] and launched[-1] is True
    monkeypatch.setattr(bwd, "DQ_TMA", "0")
    ptr_direct = direct(k)
    assert launched[-1] is False
    for name, a, b in zip(("dq", "dk", "dv"), got["grads"], ptr_direct, strict=True):
        assert torch.equal(a, b), name
    # a K view one element off 16-byte alignment: pointer loads, same gradients
    monkeypatch.setattr(bwd, "DQ_TMA", "auto")
    k_off = torch.empty(k.numel() + 1, dtype=k.dtype, device=k.device)[1:].view_as(k).copy_(k)
    off = direct(k_off)
    assert launched[-1] is False
    for name, a, b in zip(("dq", "dk", "dv"), off, ptr_direct, strict=True):
        assert torch.equal(a, b), name


@pytest.mark.gpu
def test_gpu_deterministic_bit_identical():
    lens = _lengths_total(32768, 2048, seed=3)
    q, k, v, do, dlse, cu, _ = _inputs(lens, lens, 16, 4, 128, 128, dtype=torch.bfloat16, seed=24)

    def fn(qq, kk, vv):
        return jagattn.attention(
            qq,
            kk,
            vv,
            cu,
            None,
            max(lens),
            causal=True,
            deterministic=True,
            return_lse=True,
            backend="triton",
        )

    a = _run(fn, q, k, v, do, dlse)
    b = _run(fn, q, k, v, do, dlse)
    for name, x, y in zip(("o", "lse", "dq", "dk", "dv"), a, b, strict=True):
        assert torch.equal(x, y), name


@pytest.mark.gpu
def test_gpu_opcheck():
    from jagattn.attention import ops  # noqa: F401

    lens = [3, 400, 0, 170, 1]
    q, k, v, do, dlse, cu, _ = _inputs(lens, lens, 4, 2, 64, 32, dtype=torch.bfloat16, seed=25)
    args = (
        q.requires_grad_(),
        k.requires_grad_(),
        v.requires_grad_(),
        cu,
        cu,
        400,
        400,
        64,
        0,
        0.125,
        0.0,
        True,
    )
    torch.library.opcheck(torch.ops.jagattn.attention_fwd.default, args)
    o, lse = torch.ops.jagattn.attention_fwd(*args)
    bwd = (do, q.detach(), k.detach(), v.detach(), o.detach(), lse.detach(), dlse, cu, cu, 400, 400, 64, 0, 0.125,
           0.0, True)  # fmt: skip
    torch.library.opcheck(torch.ops.jagattn.attention_bwd.default, bwd)


@pytest.mark.gpu
def test_gpu_compile_fullgraph():
    lens = [300, 1, 0, 1000, 77]
    q, k, v, do, dlse, cu, _ = _inputs(lens, lens, 8, 2, 128, 128, dtype=torch.bfloat16, seed=26)

    def f(qq, kk, vv):
        return jagattn.attention(
            qq, kk, vv, cu, cu, 1000, 1000, causal=True, return_lse=True, backend="triton"
        )

    eager = _run(f, q, k, v, do, dlse)
    compiled = _run(torch.compile(f, fullgraph=True), q, k, v, do, dlse)
    for name, x, y in zip(("o", "lse", "dq", "dk", "dv"), eager, compiled, strict=True):
        torch.testing.assert_close(x, y, rtol=0, atol=0, msg=name)


@pytest.mark.gpu
@pytest.mark.parametrize("peer", ["torch_varlen", "flash_attn"])
def test_gpu_peer_adapters_match_reference(peer):
    be = next(b for b in attention_backends.BACKENDS if b.name == peer)
    if not be.available():
        pytest.skip(f"{peer} unavailable: {be.unavailable_reason()}")
    lens_q, lens_k = [5, 700, 333, 1, 0, 129], [9, 500, 1000, 0, 7, 64]
    for hkv, opts in ((8, dict(causal=True)), (8, dict(window=(100, 20))), (2, dict(causal=True))):
        q, k, v, do, dlse, cu_q, cu_k = _inputs(lens_q, lens_k, 8, hkv, 64, 64, dtype=torch.bfloat16, seed=27)
        inputs = make_inputs(q, k, v, cu_q, cu_k, 700, 1000, return_lse=True, **opts)
        reasons = be.not_supported_reasons(inputs)
        if reasons:
            assert hkv != 8, reasons  # only GQA may be refused (torch builds without enable_gqa)
            continue
        o, lse = jagattn.attention(q, k, v, cu_q, cu_k, 700, 1000, return_lse=True, backend=peer, **opts)
        g = [t.float() for t in (q, k, v)]
        ref_o, ref_lse = attention_reference(*g, cu_q, cu_k, **opts)
        low_o, low_lse = attention_reference(q, k, v, cu_q, cu_k, compute_dtype=torch.bfloat16, **opts)
        T.check_close(f"{peer} o", o, ref_o, low_o)
        T.check_close(f"{peer} lse", lse, ref_lse, low_lse)


def test_dkdv_schedule_by_shape(monkeypatch):
    """The dK/dV tile order and grid order chosen from shapes (no sync), and the env override."""
    import triton

    from jagattn.attention.triton import bwd

    monkeypatch.delenv("JAGATTN_ATTN_HEAD_MAJOR", raising=False)
    assert bwd.dkdv_schedule(32768, 4, 1, -1) == (1, False)  # mean 8192: the long tile
    assert bwd.dkdv_schedule(32768, 4, 4, -1) == (1, False)
    # with the TMA q / dO loads the 64x64 tile (and the head-major grid with GQA) at any length
    assert bwd.dkdv_schedule(32768, 4, 4, -1, tma=True) == (0, True)
    assert bwd.dkdv_schedule(32768, 4, 1, -1, tma=True) == (0, False)
    assert bwd.dkdv_schedule(32768, 16, 4, -1) == (0, True)  # GQA, mean 2048: head-major grid
    assert bwd.dkdv_schedule(32768, 16, 1, -1) == (0, False)
    assert bwd.dkdv_schedule(32768, 4, 1, 1024) == (0, False)  # a left window caps the key length
    assert bwd.dkdv_schedule(64 * 70000, 2, 4, 100) == (0, False)  # too many slots for grid axis 1
    monkeypatch.setenv("JAGATTN_ATTN_HEAD_MAJOR", "0")
    assert bwd.dkdv_schedule(32768, 16, 4, -1) == (0, False)
    cfgs = [
        triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "DQ_T": True}, num_warps=w, num_stages=s)
        for bm, bn, w, s in ((64, 64, 4, 2), (64, 128, 8, 3))
    ]
    args = dict(BLOCK_D=128, BLOCK_DV=128, ATOMIC_DQ=False)
    first = bwd._prune_dkdv(cfgs, dict(args, LONG_KEYS=1))[0]
    assert (first.kwargs["BLOCK_N"], first.num_warps) == (128, 8)
    first = bwd._prune_dkdv(cfgs, dict(args, LONG_KEYS=0))[0]
    assert (first.kwargs["BLOCK_N"], first.num_warps) == (64, 4)


def test_row_stats_padding_covers_every_dkdv_block():
    """The dK/dV loop reads lse2/delta rows ``pad_q + m0 .. + BLOCK_M`` unmasked from the row-padded buffer
    (``bwd.row_stats_rows``): every dK/dV query block (GPU tiles and the interpreter's) must divide ROW_PAD, so
    its reads start aligned and end inside the sequence's padding; the buffer holds every sequence's rows
    rounded up to ROW_PAD, each sequence starting at a multiple of ROW_PAD."""
    from jagattn.attention.triton import bwd

    blocks = {c.kwargs["BLOCK_M"] for c in bwd._dkdv_configs() + bwd._dkdv_dq_configs()}
    blocks |= {t[0] for t in bwd.DKDV_GPU_TILES}
    assert blocks and all(bwd.ROW_PAD % bm == 0 for bm in blocks), (bwd.ROW_PAD, sorted(blocks))
    lengths = [0, 1, 63, 64, 65, 130, 0, 7]
    cu = [0]
    for n in lengths:
        cu.append(cu[-1] + n)
    rows = bwd.row_stats_rows(cu[-1], len(lengths))
    for b, n in enumerate(lengths):
        start = (cu[b] // bwd.ROW_PAD + b) * bwd.ROW_PAD
        end = start + -(-n // bwd.ROW_PAD) * bwd.ROW_PAD
        assert start % bwd.ROW_PAD == 0 and end <= rows
        if b + 1 < len(lengths):  # no overlap with the next sequence's rows
            assert end <= (cu[b + 1] // bwd.ROW_PAD + b + 1) * bwd.ROW_PAD


# the forward's launch schedule (``fwd.fwd_schedule``): tile order and grid order change no result
FWD_FLAG_CASES = [
    c for c in CASES if c[0] in ("skewed-window-causal", "uniform-window-twosided", "cross-causal")
]


@pytest.fixture(scope="module")
def long_tile_runs():
    """``name -> (o, lse)`` of the long-tile slot-order launch of a FWD_FLAG_CASES case: the same for every
    schedule compared to it, so made once per module (CI time); a test that finds a name missing makes it."""
    return {}


@pytest.mark.parametrize(
    "schedule", [("long", "1"), ("short", "0"), ("short", "1"), ("wide", "0")], ids=lambda s: "-".join(s)
)
def test_forward_schedules_same_result(schedule, monkeypatch, long_tile_runs):
    """HEAD_FAST only reorders the programs and SHORT_KEYS only reorders the config list (the
    interpreter runs its single config): outputs and lse equal the long-tile slot-order launch bit
    for bit under the interpreter; on a GPU the tiles differ, so there the check is the tolerance rule."""
    from jagattn.attention.triton import fwd

    for name, lens_q, lens_k, hq, hkv, d, dv, opts in FWD_FLAG_CASES:
        lens_k = lens_q if lens_k is None else lens_k
        q, k, v, _, _, cu_q, cu_k = _inputs(lens_q, lens_k, hq, hkv, d, dv, dtype=torch.float16, seed=31)
        args = (q, k, v, cu_q, cu_k, max(lens_q), max(lens_k))
        if name not in long_tile_runs:
            monkeypatch.setattr(fwd, "FWD_TILE_OVERRIDE", "long")
            monkeypatch.setattr(fwd, "FWD_HEAD_FAST_OVERRIDE", "0")
            long_tile_runs[name] = jagattn.attention(*args, return_lse=True, backend="triton", **opts)
        o0, lse0 = long_tile_runs[name]
        monkeypatch.setattr(fwd, "FWD_TILE_OVERRIDE", schedule[0])
        monkeypatch.setattr(fwd, "FWD_HEAD_FAST_OVERRIDE", schedule[1])
        o1, lse1 = jagattn.attention(*args, return_lse=True, backend="triton", **opts)
        if DEVICE == "cpu":
            assert torch.equal(o0, o1), name
            assert torch.equal(lse0, lse1), name
        else:  # (on CPU bitwise the default schedule, which the reference tests check: CI time)
            _compare(lens_q, lens_k, hq, hkv, d, dv, dtype=torch.float16, seed=32, **opts)


def test_fwd_schedule_by_shape(monkeypatch):
    """The forward tile class and grid order chosen from host ints (no sync), and the overrides."""
    import triton

    from jagattn.attention.triton import fwd

    long, short, wide = fwd.KEYS_LONG, fwd.KEYS_SHORT, fwd.KEYS_WIDE
    monkeypatch.setattr(fwd, "FWD_TILE_OVERRIDE", None)
    monkeypatch.setattr(fwd, "FWD_HEAD_FAST_OVERRIDE", None)
    assert fwd.fwd_schedule(3019, 3019, -1, 0) == (short, True)  # suite mean 2048: short tile, heads fastest
    assert fwd.fwd_schedule(2821, 2821, -1, -1) == (wide, False)  # non-causal mean 2048: every row sees all
    assert fwd.fwd_schedule(2047, 2047, -1, -1) == (short, True)
    assert fwd.fwd_schedule(8089, 8089, -1, 0) == (wide, False)  # skewed: the long sequences carry the work
    assert fwd.fwd_schedule(9312, 9312, -1, 0) == (wide, False)  # causal mean 8192
    assert fwd.fwd_schedule(4095, 4095, -1, 0) == (long, False)  # causal: span 2047
    assert fwd.fwd_schedule(4096, 4096, -1, 0) == (wide, False)
    assert fwd.fwd_schedule(10049, 10049, 1024, 0) == (short, True)  # a left window caps the keys
    assert fwd.fwd_schedule(10049, 10049, -1, 5000) == (wide, False)  # a right side alone caps nothing
    assert fwd.fwd_schedule(10049, 10049, 3000, 2000) == (wide, False)  # both sides: 5001 keys
    assert fwd.fwd_schedule(10049, 10049, 3500, 0) == (wide, False)  # every long row sees 3501 keys
    assert fwd.fwd_schedule(100, 4096, -1, -1) == (wide, False)
    assert fwd.fwd_schedule(3584, 3584, -1, 0) == (long, False)  # round 2: the long tile won by 2-3% here
    assert fwd.fwd_schedule(3071, 3071, -1, 0) == (short, True)
    assert fwd.fwd_schedule(None, None, -1, 0) == (long, False)  # symbolic lengths keep the long tile
    # the wide tile only at head dim 128 (where measured): other dims keep the session-5 classes
    assert fwd.fwd_schedule(2821, 2821, -1, -1, 64, 64) == (short, True)
    assert fwd.fwd_schedule(9312, 9312, -1, 0, 64, 64) == (long, False)
    assert fwd.fwd_schedule(9312, 9312, -1, 0, 256, 128) == (long, False)
    monkeypatch.setattr(fwd, "FWD_TILE_OVERRIDE", "short")
    monkeypatch.setattr(fwd, "FWD_HEAD_FAST_OVERRIDE", "0")
    assert fwd.fwd_schedule(8089, 8089, -1, 0) == (short, False)
    monkeypatch.setattr(fwd, "FWD_TILE_OVERRIDE", "wide")
    assert fwd.fwd_schedule(100, 100, -1, 0) == (wide, False)

    def configs(tiles):
        return [
            triton.Config({"BLOCK_M": bm, "BLOCK_N": bn}, num_warps=w, num_stages=s) for bm, bn, w, s in tiles
        ]

    cfgs = configs([(128, 64, 8, 3), (128, 64, 8, 2), (64, 64, 4, 3), (64, 64, 4, 2), (128, 128, 8, 3)])

    def first(**named):
        c = fwd._prune_fwd(cfgs, named)[0]
        return c.kwargs["BLOCK_M"], c.kwargs["BLOCK_N"], c.num_warps, c.num_stages

    assert first(BLOCK_D=128, BLOCK_DV=128, KEYS_CLASS=short) == (64, 64, 4, 3)
    assert first(BLOCK_D=128, BLOCK_DV=128, KEYS_CLASS=long) == (128, 64, 8, 3)
    assert first(BLOCK_D=128, BLOCK_DV=128, KEYS_CLASS=wide) == (128, 128, 8, 3)
    assert first(BLOCK_D=64, BLOCK_DV=64, KEYS_CLASS=wide) == (128, 64, 8, 3)  # measured at 128 only
    assert first(BLOCK_D=64, BLOCK_DV=64, KEYS_CLASS=short) == (64, 64, 4, 3)
    # head dims above 128 keep the list order: the first tile that fits (128x64, 2 stages)
    assert first(BLOCK_D=256, BLOCK_DV=256, KEYS_CLASS=short) == (128, 64, 8, 2)
    assert first(BLOCK_D=256, BLOCK_DV=256, KEYS_CLASS=wide) == (128, 64, 8, 2)
    # fp32 (4 bytes per element): 128x64 at 3 stages needs 256 KiB at D = 128 and is dropped; the wide
    # tile (448 KiB) is never first
    q32 = torch.empty(1, 1, 128, dtype=torch.float32)
    assert first(BLOCK_D=128, BLOCK_DV=128, KEYS_CLASS=wide, Q=q32) == (128, 64, 8, 2)
    assert first(BLOCK_D=128, BLOCK_DV=128, KEYS_CLASS=long, Q=q32) == (128, 64, 8, 2)
    # the library's GPU list: fp32 at D = 256 fits only its last-resort tile (none of the list fitted
    # before session 14: the prune then kept the last one and the launch raised OutOfResources)
    lib = configs(fwd.FWD_GPU_TILES)
    q32 = torch.empty(1, 1, 256, dtype=torch.float32)
    for cls in (long, short, wide):
        c = fwd._prune_fwd(lib, dict(BLOCK_D=256, BLOCK_DV=256, KEYS_CLASS=cls, Q=q32))[0]
        assert fwd._tile(c) == (64, 32, 4, 2)
    q16 = torch.empty(1, 1, 128, dtype=torch.bfloat16)
    assert (
        fwd._tile(fwd._prune_fwd(lib, dict(BLOCK_D=128, BLOCK_DV=128, KEYS_CLASS=wide, Q=q16))[0])
        == fwd.WIDE_KEYS_TILE
    )
    assert (
        fwd._tile(fwd._prune_fwd(lib, dict(BLOCK_D=128, BLOCK_DV=128, KEYS_CLASS=short, Q=q16))[0])
        == fwd.SHORT_KEYS_TILE
    )
    assert fwd._tile(fwd._prune_fwd(lib, dict(BLOCK_D=128, BLOCK_DV=128, KEYS_CLASS=long, Q=q16))[0]) == (
        128,
        64,
        8,
        3,
    )
