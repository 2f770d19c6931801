"""Bad inputs and memory layouts of the four public functions, on every backend name.

Part A (bad inputs): a table of invalid arguments per function, each corrupting one argument of a
valid call (wrong types, dtypes, ranks, head counts / dims, ``cu_seqlens`` / ``seq_offsets`` /
``num_targets`` / ``initial_state`` / ``g`` / ``beta`` / ``gk`` shapes and values, flags given as
ints, non-finite floats, meta tensors standing in for "another device"), run with
``backend="reference"``, ``"triton"`` and ``"auto"``: each must raise ``ValueError`` or
``TypeError`` naming the argument, before any kernel runs. A seeded random sweep applies the same
corruptions to random valid calls (lengths, heads, dims, dtype, optional arguments).

Part B (layouts): the Triton backend (interpreter on CPU) gives the same outputs and gradients for
non-contiguous views (slices of one packed ``qkv``, head-major storage, stride-0 heads) as for
contiguous copies; empty batches return correctly shaped empty outputs; valid calls leave their
inputs unchanged.

Bugs this file found (fixed in the validation, cases below): a strided 1-D ``cu_seqlens`` /
``seq_offsets`` / ``num_targets`` (``cu[::2]``) reached the kernels, which read ``ptr + b``
(heap corruption, NaN or wrong outputs); an attention window side near ``2**31 - 1`` (a common
"unbounded" sentinel) overflowed int32 positions in the Triton kernels (wrong outputs).
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable

import pytest
import torch

import jagattn
from jagattn.testing import cu_seqlens, generator, randn

BACKENDS = ("reference", "triton", "auto")
I32_MAX = 2**31 - 1
NAN, INF = float("nan"), float("inf")


# ---------------------------------------------------------------------------------------------
# valid base calls: (positional names, builder) per function


def _lens(rng: random.Random) -> list[int]:
    out = [rng.randint(1, 9) for _ in range(rng.randint(1, 4))]
    if rng.random() < 0.3:
        out.insert(rng.randint(0, len(out)), 0)  # an empty sequence is legal
    return out


def _qkv(t: int, hq: int, hk: int, d: int, dv: int, dtype: torch.dtype, seed: int) -> dict:
    """Random ``q [t, hq, d]``, ``k [t, hk, d]``, ``v [t, hk, dv]``."""
    g = generator(seed)
    shapes = {"q": (t, hq, d), "k": (t, hk, d), "v": (t, hk, dv)}
    return {n: randn(shape, dtype=dtype, generator=g) for n, shape in shapes.items()}


def _attention_args(rng: random.Random | None = None) -> dict:
    lens, hkv, group, d, dv, dt = [4, 6], 2, 2, 16, 16, torch.float32
    if rng is not None:
        lens, hkv, group = _lens(rng), rng.randint(1, 2), rng.randint(1, 3)
        dv, dt = rng.choice([8, 16]), rng.choice([torch.float32, torch.float16])
    args = _qkv(sum(lens), hkv * group, hkv, d, dv, dt, seed=0)
    return args | dict(cu_seqlens_q=cu_seqlens(lens), max_seqlen_q=max(lens))


def _hstu_args(rng: random.Random | None = None, cached: bool = False) -> dict:
    lens, h, d, dv, dt = [3, 5], 2, 16, 8, torch.float32
    if rng is not None:
        lens, h = [n + 1 for n in _lens(rng)] + [rng.randint(1, 9)], rng.randint(1, 3)
        dv, dt = rng.choice([8, 16]), rng.choice([torch.float32, torch.float16])
    args = _qkv(sum(lens), h, h, d, dv, dt, seed=1)
    if cached:
        args["delta_q"] = args.pop("q")[: len(lens)]  # Δ = 1 row per sequence
    return args | dict(
        seq_offsets=cu_seqlens(lens),
        max_seq_len=max(lens),
        alpha=0.5,
        num_targets=torch.tensor([min(1, n) for n in lens]),
    )


def _gated_delta_args(rng: random.Random | None = None) -> dict:
    lens, h, group, kd, vd, dt = [2, 6], 2, 2, 16, 8, torch.float32
    if rng is not None:
        lens, h = _lens(rng), rng.randint(1, 2)
        group = rng.randint(1, 2) if h == 2 else 2  # HV >= 2: a strided last dim of g is visible
        vd, dt = rng.choice([8, 16]), rng.choice([torch.float32, torch.float16])
    g = generator(2)
    t, hv = sum(lens), h * group
    return dict(
        q=randn((t, h, kd), dtype=dt, generator=g),
        k=randn((t, h, kd), dtype=dt, generator=g),
        v=randn((t, hv, vd), dtype=dt, generator=g),
        g=-torch.rand(t, hv, generator=g),
        beta=torch.rand(t, hv, generator=g),
        cu_seqlens=cu_seqlens(lens),
        gk=-torch.rand(t, hv, kd, generator=g),
        initial_state=randn((len(lens), hv, kd, vd), generator=g),
        output_final_state=True,
    )


OPS: dict[str, tuple[Callable, tuple[str, ...], Callable[..., dict]]] = {
    "attention": (jagattn.attention, ("q", "k", "v", "cu_seqlens_q"), _attention_args),
    "hstu": (jagattn.hstu_attention, ("q", "k", "v", "seq_offsets", "max_seq_len"), _hstu_args),
    "hstu_cached": (
        jagattn.hstu_attention_cached,
        ("delta_q", "k", "v", "seq_offsets", "max_seq_len"),
        lambda rng=None: _hstu_args(rng, cached=True),
    ),
    "gated_delta": (jagattn.gated_delta_rule, ("q", "k", "v", "g", "beta"), _gated_delta_args),
}


def _invoke(op: str, args: dict, backend: str):
    fn, positional, _ = OPS[op]
    a = dict(args)
    pos = [a.pop(n) for n in positional]
    return fn(*pos, backend=backend, **a)


# ---------------------------------------------------------------------------------------------
# corruptions: (name the message must contain, args -> overrides). Each one is invalid for every
# base call the builders above make.


def _strided_last(t: torch.Tensor) -> torch.Tensor:
    """Same values, last-dim stride 2."""
    return torch.stack([t, t], dim=-1).flatten(-2)[..., ::2]


def _strided_1d(t: torch.Tensor) -> torch.Tensor:
    """Same values, stride 2 (``cu[::2]`` of a tensor with junk in between)."""
    return torch.stack([t, torch.full_like(t, 99)], dim=-1).flatten()[::2]


def _heads(t: torch.Tensor, h: int) -> torch.Tensor:
    return torch.zeros(t.shape[0], h, *t.shape[2:], dtype=t.dtype)


def _each(name: str, makers, src: str | None = None) -> list:
    """One corruption per maker: ``name`` gets ``maker(args[src or name])``."""
    return [(name, lambda a, m=m: {name: m(a[src or name])}) for m in makers]


def _values(name: str, values) -> list:
    return [(name, lambda a, v=v: {name: v}) for v in values]


TENSOR = (
    lambda t: t.tolist(),
    lambda t: t.to(torch.int32),
    lambda t: t.flatten(-2),  # one dim short
    _strided_last,
    lambda t: t.to("meta"),  # "another device" on a CPU-only machine
)
QKV_TENSOR = TENSOR + (lambda t: t.to(torch.bfloat16 if t.dtype != torch.bfloat16 else torch.float16),)
INDEX_META = (
    lambda c: c.tolist(),
    lambda c: c.float(),
    lambda c: c.to(torch.int16),
    lambda c: c.to(torch.bool),
    lambda c: c[None],
    lambda c: c.to("meta"),
    _strided_1d,  # bug found: a strided index tensor reached the kernels (read ptr + b)
)
CU_VALUES = (
    lambda c: c[:0],
    lambda c: c + 1,  # does not start at 0
    lambda c: torch.cat([c[:1], c[1:] - 1]),  # last != total (or decreasing)
    lambda c: torch.cat([c, c[-1:] + 1]),  # last != total, one more sequence
    lambda c: torch.cat([c[:1], c[-1:], c[1:]]),  # decreasing
)
NUM_TARGETS_VALUES = (
    lambda n: n[:-1],
    lambda n: torch.cat([n, n[:1]]),
    lambda n: n - 2,  # negative
    lambda n: n + 100,  # more targets than tokens
)
BOOL_BAD = (0, 1, None, "True", torch.tensor(True))
FLOAT_BAD = (NAN, INF, -INF, "0.5", True, torch.tensor(0.5))


def _int_bad(minimum: int, optional: bool = False) -> tuple:
    return (minimum - 1, float(minimum + 1), True, "3", torch.tensor(minimum + 1)) + (
        () if optional else (None,)
    )


ATTENTION_BAD = [
    *(c for n in ("q", "k", "v") for c in _each(n, QKV_TENSOR)),
    ("k", lambda a: {"k": _heads(a["k"], a["q"].shape[1] + 1), "v": _heads(a["v"], a["q"].shape[1] + 1)}),
    ("v", lambda a: {"v": _heads(a["v"], a["k"].shape[1] + 1)}),
    ("k", lambda a: {"k": a["k"][..., :8].contiguous()}),  # head dim differs from q's
    ("v", lambda a: {"v": a["v"][1:]}),
    ("q", lambda a: {"q": a["q"][..., :0]}),
    ("q", lambda a: {"q": a["q"][:, :0], "k": a["k"][:, :0], "v": a["v"][:, :0]}),
    ("cu_seqlens_k", lambda a: {"k": a["k"][1:], "v": a["v"][1:]}),  # self-attention, Tk != Tq
    *_each("cu_seqlens_q", INDEX_META + CU_VALUES),
    # cross-attention: an explicit cu_seqlens_k that is bad in the same ways
    *_each("cu_seqlens_k", INDEX_META + CU_VALUES, src="cu_seqlens_q"),
    ("cu_seqlens_k", lambda a: {"cu_seqlens_k": a["cu_seqlens_q"][:-1]}),
    *_values("max_seqlen_q", _int_bad(0, optional=True)),
    ("max_seqlen_q", lambda a: {"max_seqlen_q": a["max_seqlen_q"] - 1}),  # SPEC: smaller is an error
    ("max_seqlen_k", lambda a: {"cu_seqlens_k": a["cu_seqlens_q"], "max_seqlen_k": a["max_seqlen_q"] - 1}),
    *_values("max_seqlen_k", _int_bad(0, optional=True)),
    *(c for n in ("causal", "deterministic", "return_lse") for c in _values(n, BOOL_BAD)),
    *_values("window", (4, (1, 2, 3), (-2, 0), (0, -5), (1.0, 0), (True, 0), (None, 0), "causal")),
    *_values("scale", FLOAT_BAD),
    *_values("softcap", FLOAT_BAD + (-1.0,)),
    ("backend", lambda a: {"backend": "nope"}),
]

HSTU_COMMON_BAD = [
    *(c for n in ("k", "v") for c in _each(n, QKV_TENSOR)),
    ("k", lambda a: {"k": _heads(a["k"], 5)}),
    ("k", lambda a: {"k": a["k"][..., :8].contiguous()}),
    ("v", lambda a: {"v": _heads(a["v"], 5)}),
    ("v", lambda a: {"v": a["v"][1:]}),
    ("v", lambda a: {"v": a["v"][..., :0]}),
    *_each("seq_offsets", INDEX_META + CU_VALUES),
    *_each("num_targets", INDEX_META + NUM_TARGETS_VALUES),
    *_values("max_seq_len", _int_bad(0, optional=True) + (0,)),
    ("max_seq_len", lambda a: {"max_seq_len": a["max_seq_len"] - 1}),
    *_values("alpha", FLOAT_BAD + (None,)),
    *_values("contextual_seq_len", _int_bad(0)),
    *_values("max_attn_len", _int_bad(0)),
    *_values("min_full_attn_seq_len", _int_bad(0)),
    *_values("scaling_seqlen", _int_bad(1, optional=True)),
    *_values("deterministic", BOOL_BAD),
    ("backend", lambda a: {"backend": 7}),
]

HSTU_BAD = [
    *_each("q", QKV_TENSOR),
    ("q", lambda a: {"q": a["q"][1:]}),  # rows differ from k's
    ("q", lambda a: {"q": a["q"][..., :0], "k": a["k"][..., :0]}),
    *HSTU_COMMON_BAD,
]

HSTU_CACHED_BAD = [
    *_each("delta_q", QKV_TENSOR),
    ("delta_q", lambda a: {"delta_q": a["delta_q"][1:]}),  # not a multiple of B
    ("delta_q", lambda a: {"delta_q": torch.cat([a["delta_q"]] * 50)}),  # Δ > every n_b
    *HSTU_COMMON_BAD,
]

GATED_DELTA_BAD = [
    *(c for n in ("q", "k", "v") for c in _each(n, QKV_TENSOR)),
    *(c for n in ("g", "beta", "gk", "initial_state") for c in _each(n, TENSOR)),
    *_each(
        "initial_state",
        (
            lambda s: s.half(),
            lambda s: s.double(),  # fp64 only with fp64 q/k/v
            lambda s: s[1:],
            lambda s: s[..., 1:],
            lambda s: s[:, :, 1:],
            lambda s: 0.0,
        ),
    ),
    ("k", lambda a: {"k": a["k"][..., 1:].contiguous()}),
    ("k", lambda a: {"k": a["k"][1:]}),
    ("v", lambda a: {"v": a["v"][1:]}),
    ("v", lambda a: {"v": a["v"][..., :0]}),
    ("v", lambda a: {n: _heads(a[n], a["v"].shape[1] + 1) for n in ("q", "k")}),  # HV % H != 0
    ("g", lambda a: {"g": torch.zeros(a["g"].shape[0], a["g"].shape[1] + 1)}),
    ("g", lambda a: {"g": a["g"][1:]}),
    ("beta", lambda a: {"beta": a["beta"][1:]}),
    ("beta", lambda a: {"beta": a["beta"][:, None]}),
    ("gk", lambda a: {"gk": a["gk"][..., 1:]}),
    ("gk", lambda a: {"gk": a["gk"][1:]}),
    ("q", lambda a: {n: torch.zeros(*a[n].shape[:2], 257) for n in ("q", "k")}),  # K > 256
    *_each("cu_seqlens", INDEX_META + CU_VALUES),
    ("cu_seqlens", lambda a: {"cu_seqlens": None}),
    *_values("scale", FLOAT_BAD),
    *(c for n in ("output_final_state", "use_qk_l2norm") for c in _values(n, BOOL_BAD)),
    ("backend", lambda a: {"backend": None}),
]

BAD: dict[str, list] = {
    "attention": ATTENTION_BAD,
    "hstu": HSTU_BAD,
    "hstu_cached": HSTU_CACHED_BAD,
    "gated_delta": GATED_DELTA_BAD,
}


def _assert_rejected(op: str, base: dict, overrides: dict, name: str, backend: str) -> None:
    """The call raises ValueError/TypeError naming ``name``; the valid base tensors are untouched."""
    before = {k: v.clone() for k, v in base.items() if isinstance(v, torch.Tensor)}
    with pytest.raises((ValueError, TypeError)) as info:
        _invoke(op, base | overrides, backend)
    assert type(info.value) in (ValueError, TypeError), f"{type(info.value).__name__}: {info.value}"
    msg = str(info.value)
    assert re.search(rf"(?<!\w){re.escape(name)}(?!\w)", msg), f"{name!r} not named in: {msg}"
    for k, t in before.items():
        assert torch.equal(base[k], t), f"{k} was modified"


CASES = [(op, i) for op, table in BAD.items() for i in range(len(table))]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("op,index", CASES, ids=[f"{op}-{BAD[op][i][0]}-{i}" for op, i in CASES])
def test_bad_argument_table(op, index, backend):
    name, fn = BAD[op][index]
    args = OPS[op][2]()
    _assert_rejected(op, args, fn(args), name, backend)


@pytest.mark.parametrize("op", list(OPS))
def test_bad_argument_random(op):
    """40 seeded random valid calls, one random corruption each, random backend name."""
    rng = random.Random(f"fuzz-{op}")
    for _ in range(40):
        args = OPS[op][2](rng)
        name, fn = rng.choice(BAD[op])
        backend = rng.choice(BACKENDS)
        try:
            _assert_rejected(op, args, fn(args), name, backend)
        except BaseException as exc:
            shapes = {k: tuple(v.shape) if isinstance(v, torch.Tensor) else v for k, v in args.items()}
            raise AssertionError(f"{op} corrupting {name!r} of {shapes} on {backend}: {exc}") from exc


def test_every_valid_base_call_runs_and_leaves_inputs_alone():
    """The base calls the corruptions start from are valid (so a rejection is the corruption's),
    and a valid call (forward and backward) does not modify its inputs."""
    for op in OPS:
        rng = random.Random(op)
        for args in [OPS[op][2]()] + [OPS[op][2](rng) for _ in range(10)]:
            args = {n: t.requires_grad_(True) if _differentiable(op, n, t) else t for n, t in args.items()}
            before = {n: t.detach().clone() for n, t in args.items() if isinstance(t, torch.Tensor)}
            out = _invoke(op, args, "reference")
            outs = [o for o in (out if isinstance(out, tuple) else (out,)) if o is not None]
            if op != "hstu_cached":
                sum(o.float().sum() for o in outs).backward()
            for n, t in before.items():
                assert torch.equal(args[n].detach(), t), f"{op}: {n} was modified"


def _differentiable(op: str, name: str, t) -> bool:
    return isinstance(t, torch.Tensor) and t.is_floating_point() and op != "hstu_cached"


# ---------------------------------------------------------------------------------------------
# Part B: layouts. The same values in other strides give the same outputs and gradients.


def _run(op: str, base: dict, layout: Callable[[dict], dict], diff: tuple[str, ...], grads: bool) -> list:
    """One triton call: the ``diff`` tensors of ``base`` become leaves, ``layout`` maps them to the
    tensors passed (views of the same values); returns the outputs and, with ``grads``, the
    gradients of the leaves. Asserts the call left every tensor it was given unchanged."""
    leaves = {n: base[n].detach().clone().requires_grad_(grads) for n in diff}
    args = base | leaves | layout(leaves)
    before = {n: t.detach().clone() for n, t in args.items() if isinstance(t, torch.Tensor)}
    with torch.set_grad_enabled(grads):
        out = _invoke(op, args, "triton")
    outs = [o for o in (out if isinstance(out, tuple) else (out,)) if o is not None]
    result = [o.detach() for o in outs]
    if grads:
        g = generator(7)
        cot = [randn(o.shape, dtype=o.dtype, generator=g) for o in outs]
        result += [x.detach() for x in torch.autograd.grad(outs, list(leaves.values()), cot)]
    for n, t in before.items():
        assert torch.equal(args[n].detach(), t), f"{op}: input {n} was modified"
    return result


def _check_layouts(op: str, base: dict, layouts: dict, diff: tuple[str, ...], grads: bool) -> None:
    want = _run(op, base, dict, diff, grads)
    for variant, layout in layouts.items():
        views = layout({n: base[n] for n in diff})
        assert any(not t.is_contiguous() for t in views.values()), f"{variant}: nothing is strided"
        got = _run(op, base, layout, diff, grads)
        assert len(got) == len(want)
        for i, (x, y) in enumerate(zip(got, want, strict=True)):
            where = f"{op}/{variant}: output/gradient {i}"
            assert x.shape == y.shape and x.dtype == y.dtype, where
            assert not torch.isnan(x).any(), f"{where}: NaN (unwritten output?)"
            torch.testing.assert_close(x, y, rtol=0, atol=0, msg=lambda m, where=where: f"{where}: {m}")


def _qkv_views(names: tuple[str, ...]) -> Callable[[dict], dict]:
    """``names`` become slices of one packed tensor along the head dim (``qkv[:, lo:hi]``)."""

    def layout(t: dict) -> dict:
        packed = torch.cat([t[n] for n in names], dim=1)
        out, lo = {}, 0
        for n in names:
            out[n] = packed[:, lo : lo + t[n].shape[1]]
            lo += t[n].shape[1]
        return out

    return layout


def _stacked(names: tuple[str, ...]) -> Callable[[dict], dict]:
    """``names`` (one shape) become ``packed[:, i]`` of ``packed = stack(..., dim=1)``."""

    def layout(t: dict) -> dict:
        packed = torch.stack([t[n] for n in names], dim=1)
        return {n: packed[:, i] for i, n in enumerate(names)}

    return layout


def _transposed(names: tuple[str, ...]) -> Callable[[dict], dict]:
    """``names`` stored with dims 0 and 1 swapped in memory (head-major)."""
    return lambda t: {n: t[n].transpose(0, 1).contiguous().transpose(0, 1) for n in names}


def _attention_base(dtype: torch.dtype, lens=(5, 0, 11)) -> dict:
    args = _qkv(sum(lens), 4, 2, 16, 16, dtype, seed=3)
    return args | dict(cu_seqlens_q=cu_seqlens(lens), max_seqlen_q=max(lens))


QKV = ("q", "k", "v")


@pytest.mark.parametrize(
    "dtype,grads,extra",
    [
        (torch.float16, True, dict(causal=True, return_lse=True)),
        (torch.float16, True, dict(window=(3, 2), softcap=5.0)),
        (torch.float32, False, dict(return_lse=True)),  # triton: fp32 forward only (backends.py)
    ],
    ids=["fp16-causal-lse", "fp16-window-softcap", "fp32-fwd"],
)
def test_attention_layouts(dtype, grads, extra):
    layouts = {"qkv-heads": _qkv_views(QKV), "head-major": _transposed(QKV)}
    _check_layouts("attention", _attention_base(dtype) | extra, layouts, QKV, grads)


def test_attention_stride0_kv_heads():
    """Expanded (stride-0) kv heads give what their materialized copy gives (forward)."""
    base = _attention_base(torch.float16)
    base["k"] = base["k"][:, :1].expand(-1, 2, -1).contiguous()
    base["v"] = base["v"][:, :1].expand(-1, 2, -1).contiguous()
    layouts = {"expanded": lambda t: {n: t[n][:, :1].expand(-1, 2, -1) for n in ("k", "v")}}
    _check_layouts("attention", base | dict(causal=True), layouts, QKV, grads=False)


def _hstu_base(dtype: torch.dtype, lens=(6, 0, 13, 1)) -> dict:
    return _qkv(sum(lens), 2, 2, 16, 16, dtype, seed=4) | dict(
        seq_offsets=cu_seqlens(lens),
        max_seq_len=max(lens),
        alpha=0.7,
        num_targets=torch.tensor([2, 0, 3, 1]),
        contextual_seq_len=1,
        max_attn_len=4,
    )


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32])
def test_hstu_layouts(dtype):
    layouts = {"qkv-stacked": _stacked(QKV), "head-major": _transposed(QKV)}
    _check_layouts("hstu", _hstu_base(dtype), layouts, QKV, grads=True)


def test_hstu_cached_layouts():
    base = _hstu_base(torch.float16, lens=(6, 2, 13, 2))
    base["delta_q"] = base.pop("q")[:8]  # Δ = 2
    names = ("delta_q", "k", "v")
    layouts = {"head-major": _transposed(names), "kv-stacked": _stacked(("k", "v"))}
    _check_layouts("hstu_cached", base, layouts, names, grads=False)


def _gated_delta_base(dtype: torch.dtype, lens=(3, 0, 40, 5)) -> dict:
    g = generator(5)
    t, h, hv, kd, vd = sum(lens), 1, 2, 16, 16
    return dict(
        q=randn((t, h, kd), dtype=dtype, generator=g),
        k=randn((t, h, kd), dtype=dtype, generator=g),
        v=randn((t, hv, vd), dtype=dtype, generator=g),
        g=-torch.rand(t, hv, generator=g) * 0.3,
        beta=torch.rand(t, hv, generator=g),
        cu_seqlens=cu_seqlens(lens),
        initial_state=randn((len(lens), hv, kd, vd), generator=g, scale=0.1),
        output_final_state=True,
        use_qk_l2norm=True,
    )


GD_ALL = ("q", "k", "v", "g", "beta", "initial_state")
GD_LAYOUTS = {
    "qk-stacked,gb-stacked,v-h0-head-major": lambda t: (
        _stacked(("q", "k"))(t) | _stacked(("g", "beta"))(t) | _transposed(("v", "initial_state"))(t)
    ),
    "head-major": _transposed(("q", "k", "v", "initial_state")),  # g, beta [T, HV]: heads are last
}


@pytest.mark.parametrize(
    "dtype,grads,with_gk",
    [(torch.float16, True, False), (torch.float16, True, True), (torch.float32, False, False)],
    ids=["fp16", "fp16-gk", "fp32-fwd"],  # fp32 with gradients: tests/test_gated_delta_fp32_train.py
)
def test_gated_delta_layouts(dtype, grads, with_gk):
    base = _gated_delta_base(dtype, lens=(4, 9) if with_gk else (3, 0, 40, 5))
    names, layouts = GD_ALL, GD_LAYOUTS
    if with_gk:  # the gk backward is slow under the interpreter: one combined layout, one chunk
        base["gk"] = -torch.rand(*base["v"].shape[:2], 16, generator=generator(6)) * 0.2
        names = GD_ALL + ("gk",)
        first = next(iter(GD_LAYOUTS.values()))
        layouts = {
            "all-strided": lambda t: first(t) | {"gk": torch.stack([t["gk"], t["gk"]], 2)[:, :, 0]},
        }
    _check_layouts("gated_delta", base, layouts, names, grads)


def test_gated_delta_4d_layouts():
    base = _gated_delta_base(torch.float16, lens=(9, 9))
    del base["cu_seqlens"]
    for n in ("q", "k", "v", "g", "beta"):
        base[n] = base[n].unflatten(0, (2, 9))
    layouts = {"batch-time-swapped": _transposed(("q", "k", "v", "g", "beta"))}
    _check_layouts("gated_delta", base, layouts, GD_ALL, grads=True)


# ---------------------------------------------------------------------------------------------
# empty batches: no tokens at all, with zero or several (empty) sequences


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("lens", [[], [0, 0, 0]], ids=["B0", "B3-empty"])
def test_attention_empty(lens, backend):
    a = _attention_base(torch.float16, lens=lens or (0,))
    a["cu_seqlens_q"] = cu_seqlens(lens)
    del a["max_seqlen_q"]
    q, k, v = (a.pop(n).requires_grad_(True) for n in QKV)
    o, lse = jagattn.attention(q, k, v, return_lse=True, backend=backend, **a)
    assert o.shape == (0, 4, 16) and o.dtype == torch.float16 and lse.shape == (4, 0)
    assert lse.dtype == torch.float32
    grads = torch.autograd.grad(o.sum(), (q, k, v), allow_unused=True)
    assert all(g is None or g.shape == t.shape for g, t in zip(grads, (q, k, v), strict=True))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("lens", [[], [0, 0, 0]], ids=["B0", "B3-empty"])
@pytest.mark.parametrize("max_seq_len", [0, None])
def test_hstu_empty(lens, backend, max_seq_len):
    a = _hstu_base(torch.float16, lens=(0,))
    a.update(
        seq_offsets=cu_seqlens(lens),
        max_seq_len=max_seq_len,
        num_targets=torch.zeros(len(lens), dtype=torch.int64),
    )
    q = a.pop("q").requires_grad_(True)
    o = _invoke("hstu", a | {"q": q}, backend)
    assert o.shape == (0, 2, 16) and o.dtype == torch.float16
    (dq,) = torch.autograd.grad(o.sum(), (q,), allow_unused=True)
    assert dq is None or dq.shape == q.shape
    with torch.no_grad():
        oc = _invoke("hstu_cached", a | {"delta_q": q[:0]}, backend)
    assert oc.shape == (0, 2, 16) and oc.dtype == torch.float16


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("lens", [[], [0, 0, 0]], ids=["N0", "N3-empty"])
def test_gated_delta_empty(lens, backend):
    a = _gated_delta_base(torch.float16, lens=lens)
    q = a.pop("q").requires_grad_(True)
    h0 = a.pop("initial_state").requires_grad_(True)
    o, fs = _invoke("gated_delta", a | {"q": q, "initial_state": h0}, backend)
    assert o.shape == (0, 2, 16) and o.dtype == torch.float16
    assert fs.shape == (len(lens), 2, 16, 16) and fs.dtype == torch.float32
    torch.testing.assert_close(fs, h0.detach(), rtol=0, atol=0)  # an empty sequence keeps its state
    if lens:
        (dh0,) = torch.autograd.grad(fs.sum(), (h0,))
        torch.testing.assert_close(dh0, torch.ones_like(h0), rtol=0, atol=0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_gated_delta_empty_4d(backend):
    a = _gated_delta_base(torch.float16, lens=[0, 0])
    del a["cu_seqlens"]
    for n in ("q", "k", "v", "g", "beta"):
        a[n] = a[n].unflatten(0, (2, 0))
    o, fs = _invoke("gated_delta", a, backend)
    assert o.shape == (2, 0, 2, 16) and fs.shape == (2, 2, 16, 16)
    torch.testing.assert_close(fs, a["initial_state"], rtol=0, atol=0)


# ---------------------------------------------------------------------------------------------
# bug found: attention window sides near 2**31 - 1 overflowed int32 positions in the Triton kernels


@pytest.mark.parametrize(
    "window,causal,cross",
    [
        ((I32_MAX, I32_MAX), False, False),
        ((-1, I32_MAX), False, False),
        ((I32_MAX, -1), False, True),  # cross-attention with Lk < Lq: diag < 0
        ((I32_MAX, 0), True, True),
    ],
)
def test_attention_huge_window_is_unbounded(window, causal, cross):
    """A side at least as long as every sequence bounds nothing: the same result as ``-1``.

    Before the fix, triton gave outputs off by up to ~2.6 (fp16) for these windows; the kernels
    are also checked with the largest side that still is not normalized away (Tk - 1, Tq - 1)."""
    a = _attention_base(torch.float16)
    if cross:
        a.update(k=a["k"][:9], v=a["v"][:9], cu_seqlens_k=torch.tensor([0, 2, 2, 9], dtype=torch.int32))
    unbounded = (-1, 0 if causal else -1)
    want = _invoke("attention", a | dict(window=unbounded, causal=causal), "triton")
    ref = _invoke("attention", a | dict(window=unbounded, causal=causal), "reference")
    torch.testing.assert_close(want, ref, rtol=2e-3, atol=2e-3)
    got = _invoke("attention", a | dict(window=window, causal=causal), "triton")
    torch.testing.assert_close(got, want, rtol=0, atol=0)
    tk, tq = a["k"].shape[0], a["q"].shape[0]
    largest = (tk - 1 if window[0] >= 0 else -1, tq - 1 if window[1] > 0 else window[1])
    got = _invoke("attention", a | dict(window=largest, causal=causal), "triton")
    torch.testing.assert_close(got, want, rtol=0, atol=0)


def test_max_seqlen_larger_than_real_is_allowed():
    """SPEC: max_seqlen is an upper bound the caller passes; larger than the real maximum is fine."""
    a = _attention_base(torch.float16)
    want = _invoke("attention", a, "triton")
    got = _invoke("attention", a | dict(max_seqlen_q=10**6), "triton")
    torch.testing.assert_close(got, want, rtol=0, atol=0)
    h = _hstu_base(torch.float16)
    want = _invoke("hstu", h | dict(scaling_seqlen=h["max_seq_len"]), "triton")
    got = _invoke(
        "hstu", h | dict(max_seq_len=4 * h["max_seq_len"], scaling_seqlen=h["max_seq_len"]), "triton"
    )
    torch.testing.assert_close(got, want, rtol=0, atol=0)
