"""The gated delta reference against independent oracles, and the API's validation.

Oracles: a chunked WY (state-passing) formulation written here from the math, in fp64, with
per-key decays; finite differences (``gradcheck``) for every gradient; splitting a sequence in two
with the state carried across; explicit expansion of the q/k heads for GVA.
"""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

import jagattn
from jagattn import testing
from jagattn.gated_delta.api import GatedDeltaInputs, gated_delta_rule, make_inputs
from jagattn.gated_delta.reference import gated_delta_reference

F64 = torch.float64

# ---------------------------------------------------------------------------------------------
# an independent chunked oracle


def chunked_oracle(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    beta: torch.Tensor,
    lengths: list[int],
    *,
    scale: float | None = None,
    initial_state: torch.Tensor | None = None,
    use_qk_l2norm: bool = False,
    gk: torch.Tensor | None = None,
    chunk: int = 8,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The gated delta rule by chunks: WY form with a unit-lower-triangular solve, state passing.

    Within a chunk starting from state ``S0``, with per-key cumulative log decay ``G_t``
    (``sum_{s<=t} g_s + gk_s``) and ``E_ts = exp(G_t - G_s)`` (``s <= t``)::

        u + A u = beta * (v - (k * exp(G)) S0),   A_ts = beta_t sum_k k_t k_s E_ts   (s < t)
        o_t     = scale * ((q_t * exp(G_t)) S0 + sum_{s<=t} (sum_k q_t k_s E_ts) u_s)
        S_end   = exp(G_C) * S0 + sum_s (k_s * exp(G_C - G_s)) u_s^T

    Computed in the dtype of ``q`` (use fp64). Returns ``(o [T, HV, V], final [N, HV, K, V])``.
    """
    dt = q.dtype
    _, h, dk = q.shape
    hv, dv = v.shape[1:]
    grp = hv // h
    scale = dk**-0.5 if scale is None else scale
    if use_qk_l2norm:
        q = q / torch.sqrt(q.pow(2).sum(-1, keepdim=True) + 1e-6)
        k = k / torch.sqrt(k.pow(2).sum(-1, keepdim=True) + 1e-6)
    qh = q.repeat_interleave(grp, 1).transpose(0, 1)  # [HV, T, K]
    kh = k.repeat_interleave(grp, 1).transpose(0, 1)
    vh = v.to(dt).transpose(0, 1)  # [HV, T, V]
    logd = g.to(dt).transpose(0, 1)[:, :, None].expand(hv, q.shape[0], dk)
    if gk is not None:
        logd = logd + gk.to(dt).transpose(0, 1)
    bh = beta.to(dt).transpose(0, 1)  # [HV, T]
    o_parts, finals = [], []
    bos = 0
    for n, length in enumerate(lengths):
        s = initial_state[n].to(dt) if initial_state is not None else torch.zeros(hv, dk, dv, dtype=dt)
        for c0 in range(0, length, chunk):
            rows = slice(bos + c0, bos + min(c0 + chunk, length))
            qc, kc, vc, bc = qh[:, rows], kh[:, rows], vh[:, rows], bh[:, rows]
            gcum = logd[:, rows].cumsum(1)  # [HV, C, K]
            c = qc.shape[1]
            causal = torch.ones(c, c, dtype=torch.bool).tril()
            diff = gcum[:, :, None, :] - gcum[:, None, :, :]  # [HV, C, C, K]
            e = torch.exp(torch.where(causal[None, :, :, None], diff, torch.full_like(diff, -math.inf)))
            kk = torch.einsum("htk,hsk,htsk->hts", kc, kc, e) * (~torch.eye(c, dtype=torch.bool))
            a = bc[:, :, None] * kk
            rhs = bc[:, :, None] * (vc - torch.einsum("htk,hkv->htv", kc * gcum.exp(), s))
            eye = torch.eye(c, dtype=dt).expand(hv, c, c)
            u = torch.linalg.solve_triangular(eye + a, rhs, upper=False, unitriangular=True)
            qk = torch.einsum("htk,hsk,htsk->hts", qc, kc, e)
            o_parts.append(scale * (torch.einsum("htk,hkv->htv", qc * gcum.exp(), s) + qk @ u))
            last = gcum[:, -1:, :]  # [HV, 1, K]
            s = last[:, 0, :, None].exp() * s + torch.einsum("hsk,hsv->hkv", kc * (last - gcum).exp(), u)
        finals.append(s)
        bos += length
    o = torch.cat(o_parts, 1).transpose(0, 1) if o_parts else torch.zeros(0, hv, dv, dtype=dt)
    final = torch.stack(finals) if finals else torch.zeros(0, hv, dk, dv, dtype=dt)
    return o, final


# ---------------------------------------------------------------------------------------------
# helpers


def make_case(
    lengths: list[int],
    h: int = 2,
    hv: int = 2,
    dk: int = 8,
    dv: int = 4,
    *,
    dtype: torch.dtype = F64,
    with_gk: bool = False,
    with_init: bool = False,
    l2: bool = False,
    seed: int = 0,
) -> dict:
    """Random leaf tensors for one call (never zeros). Without l2norm, k is scaled to unit-ish norm
    so ``beta |k|^2 <= 2`` mostly holds and the recurrence stays bounded."""
    gen = testing.generator(seed)
    t = sum(lengths)
    n = len(lengths)
    kscale = 1.0 if l2 else dk**-0.5
    case = {
        "q": testing.randn([t, h, dk], dtype=dtype, generator=gen),
        "k": testing.randn([t, h, dk], dtype=dtype, generator=gen, scale=kscale),
        "v": testing.randn([t, hv, dv], dtype=dtype, generator=gen),
        "g": F.logsigmoid(testing.randn([t, hv], generator=gen, scale=1.0) + 1.0).to(dtype),
        "beta": torch.sigmoid(testing.randn([t, hv], generator=gen)).to(dtype),
        "gk": F.logsigmoid(testing.randn([t, hv, dk], generator=gen) + 2.0).to(dtype) if with_gk else None,
        "initial_state": testing.randn(
            [n, hv, dk, dv], dtype=F64 if dtype == F64 else torch.float32, generator=gen
        )
        if with_init
        else None,
    }
    for val in case.values():
        if val is not None:
            val.requires_grad_(True)
    case["cu_seqlens"] = testing.cu_seqlens(lengths)
    case["use_qk_l2norm"] = l2
    return case


GRAD_NAMES = ("q", "k", "v", "g", "beta", "gk", "initial_state")


def leaves(case: dict) -> dict[str, torch.Tensor]:
    return {n: case[n] for n in GRAD_NAMES if case.get(n) is not None}


def run_reference(case: dict, **kw) -> tuple[torch.Tensor, torch.Tensor]:
    return gated_delta_reference(
        case["q"],
        case["k"],
        case["v"],
        case["g"],
        case["beta"],
        case["cu_seqlens"],
        initial_state=case["initial_state"],
        use_qk_l2norm=case["use_qk_l2norm"],
        gk=case["gk"],
        **kw,
    )


def run_oracle(case: dict, lengths: list[int], cast: torch.dtype | None = None, chunk: int = 8):
    c = {n: (t.to(cast) if cast is not None and t is not None else t) for n, t in leaves(case).items()}
    return chunked_oracle(
        c["q"],
        c["k"],
        c["v"],
        c["g"],
        c["beta"],
        lengths,
        initial_state=c.get("initial_state"),
        use_qk_l2norm=case["use_qk_l2norm"],
        gk=c.get("gk"),
        chunk=chunk,
    )


def outputs_and_grads(fn, case: dict, seed: int = 1) -> dict[str, torch.Tensor]:
    """Forward outputs plus the gradient of every leaf for fixed random cotangents."""
    o, fs = fn()
    gen = testing.generator(seed)
    do = testing.randn(o.shape, generator=gen).to(o.dtype)
    dfs = testing.randn(fs.shape, generator=gen).to(fs.dtype)
    ls = leaves(case)
    loss = (o * do).sum() + (fs * dfs).sum()
    if loss.requires_grad:
        grads = torch.autograd.grad(loss, list(ls.values()), allow_unused=True)
    else:  # the oracle builds nothing from the inputs when there are no tokens and no state
        grads = [None] * len(ls)
    out = {"o": o.detach(), "final_state": fs.detach()}
    for name, gr in zip(ls, grads, strict=True):
        out["d" + name] = gr if gr is not None else torch.zeros_like(ls[name])
    return out


def assert_all_close(out: dict, gold: dict, lowp: dict, what: str) -> None:
    assert out.keys() == gold.keys() == lowp.keys()
    for name in gold:
        testing.check_close(f"{what}: {name}", out[name], gold[name], lowp[name])


# ---------------------------------------------------------------------------------------------
# reference vs the chunked oracle

LENGTH_SETS = {
    "odd": [1, 13, 17, 9],
    "empties": [0, 11, 0, 20, 0],
    "single": [33],
}


@pytest.mark.parametrize("lengths", list(LENGTH_SETS.values()), ids=list(LENGTH_SETS))
@pytest.mark.parametrize("with_gk", [False, True], ids=["g", "g+gk"])
@pytest.mark.parametrize("with_init", [False, True], ids=["zero0", "init"])
@pytest.mark.parametrize("l2", [False, True], ids=["raw", "l2"])
@pytest.mark.parametrize("heads", [(2, 2), (1, 3)], ids=["mha", "gva3"])
def test_reference_matches_chunked_oracle(lengths, with_gk, with_init, l2, heads):
    h, hv = heads
    case = make_case(lengths, h, hv, with_gk=with_gk, with_init=with_init, l2=l2, seed=len(lengths) + 7 * hv)
    out = outputs_and_grads(lambda: run_reference(case), case)
    gold = outputs_and_grads(lambda: run_oracle(case, lengths), case)
    # the "input-dtype run" for fp64 inputs: the same oracle computed in fp32
    lowp = outputs_and_grads(lambda: run_oracle(case, lengths, cast=torch.float32), case)
    assert_all_close(out, gold, lowp, "reference vs chunked oracle")


@pytest.mark.parametrize("chunk", [1, 4, 64])
def test_chunk_size_does_not_matter_to_the_oracle(chunk):
    # guards the oracle itself: chunk 1 is the token recurrence, chunk 64 one chunk per sequence
    lengths = [5, 19]
    case = make_case(lengths, 1, 2, with_gk=True, with_init=True, seed=3)
    a = run_oracle(case, lengths, chunk=chunk)
    b = run_oracle(case, lengths, chunk=8)
    torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-10)


# ---------------------------------------------------------------------------------------------
# gradients by finite differences


@pytest.mark.parametrize("with_gk", [False, True])
@pytest.mark.parametrize("l2", [False, True])
def test_reference_gradcheck(with_gk, l2):
    lengths = [3, 0, 4]
    case = make_case(lengths, 1, 2, dk=3, dv=2, with_gk=with_gk, with_init=True, l2=l2, seed=11)
    names = list(leaves(case))

    def fn(*xs):
        c = dict(case, **dict(zip(names, xs, strict=True)))
        return run_reference(c)

    assert torch.autograd.gradcheck(fn, tuple(leaves(case).values()), eps=1e-6, atol=1e-7, rtol=1e-5)


# ---------------------------------------------------------------------------------------------
# splitting a sequence and carrying the state


@pytest.mark.parametrize("with_gk", [False, True])
@pytest.mark.parametrize("l2", [False, True])
def test_split_sequence_carries_state(with_gk, l2):
    n1, n2 = 9, 14
    case = make_case([n1 + n2], 2, 4, with_gk=with_gk, with_init=True, l2=l2, seed=5)
    whole = outputs_and_grads(lambda: run_reference(case), case)

    def split():
        first = {
            n: (t[:n1] if n not in ("initial_state", "cu_seqlens") and torch.is_tensor(t) else t)
            for n, t in case.items()
        }
        second = {
            n: (t[n1:] if n not in ("initial_state", "cu_seqlens") and torch.is_tensor(t) else t)
            for n, t in case.items()
        }
        first["cu_seqlens"] = testing.cu_seqlens([n1])
        o1, s1 = run_reference(first)
        second["cu_seqlens"] = testing.cu_seqlens([n2])
        second["initial_state"] = s1
        o2, s2 = run_reference(second)
        return torch.cat([o1, o2]), s2

    parts = outputs_and_grads(split, case)
    for name in whole:
        torch.testing.assert_close(parts[name], whole[name], rtol=1e-10, atol=1e-12, msg=name)


# ---------------------------------------------------------------------------------------------
# layouts, GVA, empties, public API


def test_packed_vs_4d_batch():
    b, t = 3, 7
    case = make_case([t] * b, 2, 4, with_gk=True, with_init=True, l2=True, seed=9)
    packed = outputs_and_grads(
        lambda: gated_delta_rule(
            case["q"],
            case["k"],
            case["v"],
            case["g"],
            case["beta"],
            cu_seqlens=case["cu_seqlens"],
            initial_state=case["initial_state"],
            output_final_state=True,
            use_qk_l2norm=True,
            gk=case["gk"],
        ),
        case,
    )

    def batched():
        u = {n: x.unflatten(0, (b, t)) for n, x in leaves(case).items() if n != "initial_state"}
        o, fs = gated_delta_rule(
            u["q"],
            u["k"],
            u["v"],
            u["g"],
            u["beta"],
            initial_state=case["initial_state"],
            output_final_state=True,
            use_qk_l2norm=True,
            gk=u["gk"],
        )
        assert o.shape == (b, t, 4, 4)
        return o.flatten(0, 1), fs

    four = outputs_and_grads(batched, case)
    for name in packed:
        torch.testing.assert_close(four[name], packed[name], rtol=0, atol=0, msg=name)


def test_4d_with_cu_seqlens_and_batch_one():
    lengths = [5, 0, 8]
    case = make_case(lengths, 1, 2, seed=2)
    o_p, fs_p = gated_delta_rule(
        case["q"],
        case["k"],
        case["v"],
        case["g"],
        case["beta"],
        cu_seqlens=case["cu_seqlens"],
        output_final_state=True,
    )
    u = [case[n].unsqueeze(0) for n in ("q", "k", "v", "g", "beta")]
    o_4, fs_4 = gated_delta_rule(*u, cu_seqlens=case["cu_seqlens"], output_final_state=True)
    assert o_4.shape == (1,) + tuple(o_p.shape)
    torch.testing.assert_close(o_4[0], o_p, rtol=0, atol=0)
    torch.testing.assert_close(fs_4, fs_p, rtol=0, atol=0)


def test_gva_equals_expanded_heads():
    lengths = [6, 10]
    h, grp = 2, 3
    case = make_case(lengths, h, h * grp, with_gk=True, with_init=True, l2=True, seed=4)
    gva = outputs_and_grads(lambda: run_reference(case), case)

    def expanded():
        c = dict(case)
        c["q"] = case["q"].repeat_interleave(grp, 1)
        c["k"] = case["k"].repeat_interleave(grp, 1)
        return run_reference(c)

    exp = outputs_and_grads(expanded, case)  # dq/dk of the expansion sum over the group
    for name in gva:
        torch.testing.assert_close(gva[name], exp[name], rtol=1e-12, atol=1e-12, msg=name)


def test_empty_sequences_keep_initial_state_and_zero_tokens():
    case = make_case([0, 0], 1, 2, with_init=True, with_gk=True, seed=6)
    o, fs = gated_delta_rule(
        case["q"],
        case["k"],
        case["v"],
        case["g"],
        case["beta"],
        cu_seqlens=case["cu_seqlens"],
        initial_state=case["initial_state"],
        output_final_state=True,
        gk=case["gk"],
    )
    assert o.shape == (0, 2, 4)
    torch.testing.assert_close(fs, case["initial_state"].detach(), rtol=0, atol=0)
    got = outputs_and_grads(lambda: run_reference(case), case)
    dfs = testing.randn(fs.shape, generator=testing.generator(1)).to(fs.dtype)
    torch.testing.assert_close(got["dinitial_state"], dfs, rtol=0, atol=0)
    for name in ("dq", "dk", "dv", "dg", "dbeta", "dgk"):
        assert got[name].shape == case[name[1:]].shape
        assert torch.count_nonzero(got[name]) == 0


def test_no_sequences_at_all():
    case = make_case([], 1, 1, seed=1)
    o, fs = gated_delta_rule(
        case["q"],
        case["k"],
        case["v"],
        case["g"],
        case["beta"],
        cu_seqlens=case["cu_seqlens"],
        output_final_state=True,
    )
    assert o.shape == (0, 1, 4) and fs.shape == (0, 1, 8, 4)
    (o.sum() + fs.sum()).backward()
    assert case["q"].grad is not None and case["q"].grad.shape == (0, 1, 8)


def test_empty_sequence_between_others_matches_without_it():
    with_empty = make_case([7, 0, 5], 1, 2, with_init=True, seed=8)
    o, fs = run_reference(with_empty)
    without = dict(with_empty)
    without["cu_seqlens"] = testing.cu_seqlens([7, 5])
    without["initial_state"] = with_empty["initial_state"][[0, 2]]
    o2, fs2 = run_reference(without)
    torch.testing.assert_close(o, o2, rtol=0, atol=0)
    torch.testing.assert_close(fs[[0, 2]], fs2, rtol=0, atol=0)
    torch.testing.assert_close(fs[1], with_empty["initial_state"][1].detach(), rtol=0, atol=0)


def test_final_state_only_when_asked_and_outputs_dtypes():
    case = make_case([4, 3], 1, 2, dtype=torch.bfloat16, with_init=True, seed=2)
    args = [case[n] for n in ("q", "k", "v", "g", "beta")]
    o, fs = gated_delta_rule(
        *args, cu_seqlens=case["cu_seqlens"], initial_state=case["initial_state"], backend="reference"
    )
    assert fs is None and o.dtype == torch.bfloat16
    o, fs = gated_delta_rule(
        *args, cu_seqlens=case["cu_seqlens"], output_final_state=True, backend="reference"
    )
    assert fs.dtype == torch.float32 and fs.shape == (2, 2, 8, 4)


def test_scale_is_applied():
    case = make_case([6], 1, 1, seed=3)
    o1, _ = run_reference(case)
    o2, _ = run_reference(case, scale=0.25)
    torch.testing.assert_close(o2, o1 * (0.25 / 8**-0.5), rtol=1e-12, atol=1e-12)


def test_explain_lists_reference():
    case = make_case([3], 1, 1, seed=0)
    table = jagattn.explain(
        "gated_delta", case["q"], case["k"], case["v"], case["g"], case["beta"], cu_seqlens=case["cu_seqlens"]
    )
    assert table.chosen is not None
    assert "reference" in [r.backend for r in table.rows]


def test_inputs_metadata():
    case = make_case([3, 0, 4], 2, 4, with_gk=True, with_init=True, seed=0)
    inp = make_inputs(
        case["q"],
        case["k"],
        case["v"],
        case["g"],
        case["beta"],
        cu_seqlens=case["cu_seqlens"],
        initial_state=case["initial_state"],
        gk=case["gk"],
    )
    assert isinstance(inp, GatedDeltaInputs)
    assert (inp.num_heads, inp.num_value_heads, inp.head_dim_k, inp.head_dim_v) == (2, 4, 8, 4)
    assert (inp.num_seqs, inp.total_tokens, inp.has_gk, inp.has_initial_state) == (3, 7, True, True)
    assert inp.requires_grad and not inp.is_batched and inp.scale == 8**-0.5


# ---------------------------------------------------------------------------------------------
# the input-dtype run used by the tolerance rule


def test_compute_dtype_rounds_but_stays_close():
    lengths = [40, 25]
    case = make_case(lengths, 2, 2, dtype=torch.float32, with_gk=True, with_init=True, l2=True, seed=12)
    gold = outputs_and_grads(
        lambda: run_reference({**case, **{n: t.double() for n, t in leaves(case).items()}}), case
    )
    full = outputs_and_grads(lambda: run_reference(case), case)
    low = outputs_and_grads(lambda: run_reference(case, compute_dtype=torch.bfloat16), case)
    for name in gold:
        e_full = testing.errors(full[name], gold[name])
        e_low = testing.errors(low[name], gold[name])
        rel = e_low.rms / testing.rms(gold[name])
        assert e_low.rms > 4 * e_full.rms, (name, e_low, e_full)  # it really rounds
        assert rel < 2e-2, (name, rel)  # ...at the level of bf16, not worse


# ---------------------------------------------------------------------------------------------
# property test over random jagged batches


@settings(max_examples=12, deadline=None)
@given(
    lengths=st.lists(st.integers(0, 20), min_size=1, max_size=4),
    heads=st.sampled_from([(1, 1), (1, 2), (2, 4)]),
    dk=st.sampled_from([1, 4, 16]),
    dv=st.sampled_from([1, 3, 8]),
    with_gk=st.booleans(),
    with_init=st.booleans(),
    l2=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_property_reference_vs_oracle(lengths, heads, dk, dv, with_gk, with_init, l2, seed):
    h, hv = heads
    case = make_case(lengths, h, hv, dk, dv, with_gk=with_gk, with_init=with_init, l2=l2, seed=seed)
    out = outputs_and_grads(lambda: run_reference(case), case)
    gold = outputs_and_grads(lambda: run_oracle(case, lengths, chunk=5), case)
    lowp = outputs_and_grads(lambda: run_oracle(case, lengths, cast=torch.float32, chunk=5), case)
    assert_all_close(out, gold, lowp, f"lengths={lengths}")


# ---------------------------------------------------------------------------------------------
# validation: every bad argument raises, naming it


def _good(**over):
    t, h, hv, dk, dv = 6, 2, 4, 8, 4
    args = {
        "q": torch.randn(t, h, dk),
        "k": torch.randn(t, h, dk),
        "v": torch.randn(t, hv, dv),
        "g": -torch.rand(t, hv),
        "beta": torch.rand(t, hv),
        "cu_seqlens": torch.tensor([0, 2, 6], dtype=torch.int32),
    }
    args.update(over)
    return args


def _call(args):
    a = dict(args)
    pos = [a.pop(n) for n in ("q", "k", "v", "g", "beta")]
    return gated_delta_rule(*pos, **a)


BAD = {
    "q not a tensor": (dict(q=[1.0]), TypeError, "q"),
    "q rank": (dict(q=torch.randn(6, 8)), ValueError, "q"),
    "q int dtype": (dict(q=torch.ones(6, 2, 8, dtype=torch.int32)), ValueError, "q"),
    "k shape": (dict(k=torch.randn(6, 2, 4)), ValueError, "k"),
    "k rank": (dict(k=torch.randn(1, 6, 2, 8)), ValueError, "k"),
    "k dtype": (dict(k=torch.randn(6, 2, 8, dtype=F64)), ValueError, "k"),
    "v rows": (dict(v=torch.randn(5, 4, 4)), ValueError, "v"),
    "v dtype": (dict(v=torch.randn(6, 4, 4).half()), ValueError, "v"),
    "GVA ratio": (
        dict(v=torch.randn(6, 3, 4), g=-torch.rand(6, 3), beta=torch.rand(6, 3)),
        ValueError,
        "HV=3",
    ),
    "K too big": (
        dict(q=torch.randn(6, 2, 257), k=torch.randn(6, 2, 257)),
        ValueError,
        "K=257",
    ),
    "V zero": (dict(v=torch.randn(6, 4, 0)), ValueError, "v"),
    "g shape": (dict(g=-torch.rand(6, 2)), ValueError, "g"),
    "g rank": (dict(g=-torch.rand(6, 4, 1)), ValueError, "g"),
    "g int": (dict(g=torch.zeros(6, 4, dtype=torch.int64)), ValueError, "g"),
    "beta shape": (dict(beta=torch.rand(5, 4)), ValueError, "beta"),
    "beta not tensor": (dict(beta=0.5), TypeError, "beta"),
    "gk shape": (dict(gk=-torch.rand(6, 4, 4)), ValueError, "gk"),
    "gk rank": (dict(gk=-torch.rand(6, 4)), ValueError, "gk"),
    "q last dim strided": (dict(q=torch.randn(6, 2, 16)[..., ::2]), ValueError, "q"),
    "v last dim strided": (dict(v=torch.randn(6, 4, 8)[..., ::2]), ValueError, "v"),
    "gk last dim strided": (dict(gk=(-torch.rand(6, 4, 16))[..., ::2]), ValueError, "gk"),
    "g strided heads": (dict(g=(-torch.rand(6, 8))[:, ::2]), ValueError, "g"),
    "cu missing": (dict(cu_seqlens=None), ValueError, "cu_seqlens"),
    "cu float": (dict(cu_seqlens=torch.tensor([0.0, 6.0])), ValueError, "cu_seqlens"),
    "cu 2-D": (dict(cu_seqlens=torch.tensor([[0, 6]])), ValueError, "cu_seqlens"),
    "cu empty": (dict(cu_seqlens=torch.zeros(0, dtype=torch.int32)), ValueError, "cu_seqlens"),
    "cu not tensor": (dict(cu_seqlens=[0, 6]), TypeError, "cu_seqlens"),
    "cu start": (dict(cu_seqlens=torch.tensor([1, 6])), ValueError, "cu_seqlens"),
    "cu decreasing": (dict(cu_seqlens=torch.tensor([0, 4, 2, 6])), ValueError, "cu_seqlens"),
    "cu end": (dict(cu_seqlens=torch.tensor([0, 2, 5])), ValueError, "cu_seqlens"),
    "init shape N": (dict(initial_state=torch.randn(3, 4, 8, 4)), ValueError, "initial_state"),
    "init shape K": (dict(initial_state=torch.randn(2, 4, 4, 4)), ValueError, "initial_state"),
    "init rank": (dict(initial_state=torch.randn(4, 8, 4)), ValueError, "initial_state"),
    "init bf16": (dict(initial_state=torch.randn(2, 4, 8, 4).bfloat16()), ValueError, "initial_state"),
    "init fp64 with fp32 q": (
        dict(initial_state=torch.randn(2, 4, 8, 4, dtype=F64)),
        ValueError,
        "initial_state",
    ),
    "init not tensor": (dict(initial_state=1.0), TypeError, "initial_state"),
    "scale inf": (dict(scale=math.inf), ValueError, "scale"),
    "scale nan": (dict(scale=math.nan), ValueError, "scale"),
    "scale str": (dict(scale="1"), TypeError, "scale"),
    "output_final_state": (dict(output_final_state=1), TypeError, "output_final_state"),
    "use_qk_l2norm": (dict(use_qk_l2norm="yes"), TypeError, "use_qk_l2norm"),
    "backend unknown": (dict(backend="nope"), ValueError, "backend"),
    "backend type": (dict(backend=3), TypeError, "backend"),
    "4-D B>1 with cu": (
        dict(
            q=torch.randn(2, 3, 2, 8),
            k=torch.randn(2, 3, 2, 8),
            v=torch.randn(2, 3, 4, 4),
            g=-torch.rand(2, 3, 4),
            beta=torch.rand(2, 3, 4),
            cu_seqlens=torch.tensor([0, 3, 6]),
        ),
        ValueError,
        "cu_seqlens",
    ),
    "4-D g rank": (
        dict(
            q=torch.randn(2, 3, 2, 8),
            k=torch.randn(2, 3, 2, 8),
            v=torch.randn(2, 3, 4, 4),
            g=-torch.rand(6, 4),
            beta=torch.rand(2, 3, 4),
            cu_seqlens=None,
        ),
        ValueError,
        "g",
    ),
    "4-D init N": (
        dict(
            q=torch.randn(2, 3, 2, 8),
            k=torch.randn(2, 3, 2, 8),
            v=torch.randn(2, 3, 4, 4),
            g=-torch.rand(2, 3, 4),
            beta=torch.rand(2, 3, 4),
            cu_seqlens=None,
            initial_state=torch.randn(3, 4, 8, 4),
        ),
        ValueError,
        "initial_state",
    ),
}


@pytest.mark.parametrize("bad", list(BAD.values()), ids=list(BAD))
def test_validation_errors(bad):
    over, exc, name = bad
    with pytest.raises(exc, match=name):
        _call(_good(**over))


def test_validation_device_mismatch():
    # a meta tensor stands in for "another device" on a CPU-only machine
    with pytest.raises(ValueError, match="beta"):
        _call(_good(beta=torch.rand(6, 4, device="meta")))


def test_good_arguments_pass_and_are_not_mutated():
    args = _good(
        gk=-torch.rand(6, 4, 8),
        initial_state=torch.randn(2, 4, 8, 4),
        output_final_state=True,
        backend="reference",
    )
    before = {n: t.clone() for n, t in args.items() if torch.is_tensor(t)}
    o, fs = _call(args)
    assert o.shape == (6, 4, 4) and fs.shape == (2, 4, 8, 4)
    for n, t in before.items():
        assert torch.equal(args[n], t), n
