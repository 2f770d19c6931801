"""Per-key gates ``gk`` in the chunked Triton gated delta kernels against the recurrent reference.

SPEC.md section 5 rule on the output, the final state and every gradient (q, k, v, g, beta, gk,
initial_state), over jagged batches with empty and length-1 sequences and partial chunks, GVA, gk
with and without a scalar g, strongly negative gates (chunk-local cumulative sums in the hundreds:
the stability case of the sub-block split), initial state and l2norm on and off. CPU CI runs the
kernels under the Triton interpreter (fp32, fp16: its bf16 ``tl.dot`` is broken); the ``gpu`` cases
run the production size in bf16 on the device.
"""

from __future__ import annotations

import os
import zlib

import pytest
import torch
import torch.nn.functional as F

import jagattn
import jagattn.gated_delta.api
from jagattn import testing
from jagattn.gated_delta import ops
from jagattn.gated_delta.backends import TritonBackend
from jagattn.gated_delta.reference import gated_delta_reference

# the chunked kernels' tests: fp32 without gradients stays on the chunked path (conftest's chunked_fp32)
pytestmark = pytest.mark.usefixtures("chunked_fp32")


NAMES = ("q", "k", "v", "g", "beta", "gk", "initial_state")


def make_case(lengths, h, hv, dk, dv, *, dtype, with_init, l2, with_g, strong, seed, device="cpu"):
    """Random leaves; ``strong``: gk ~ -U(0, 8) per token and key (chunk sums reach hundreds), else
    logsigmoid gates near 0; ``with_g=False`` gives a zero scalar gate (still differentiated)."""
    gen = testing.generator(seed)
    t = sum(lengths)
    kscale = 1.0 if l2 else dk**-0.5
    if strong:
        gk = -8.0 * torch.rand(t, hv, dk, generator=gen)
    else:
        gk = F.logsigmoid(testing.randn([t, hv, dk], generator=gen) + 3.0)
    g = F.logsigmoid(testing.randn([t, hv], generator=gen) + 2.0)
    case = {
        "q": testing.randn([t, h, dk], dtype=dtype, generator=gen, device=device),
        "k": testing.randn([t, h, dk], dtype=dtype, generator=gen, device=device, scale=kscale),
        "v": testing.randn([t, hv, dv], dtype=dtype, generator=gen, device=device),
        "g": (g if with_g else torch.zeros_like(g)).to(device),
        "beta": torch.sigmoid(testing.randn([t, hv], generator=gen)).to(device),
        "gk": gk.to(device),
        "initial_state": testing.randn([len(lengths), hv, dk, dv], generator=gen, device=device)
        if with_init
        else None,
    }
    for x in case.values():
        if x is not None:
            x.requires_grad_(True)
    case["cu_seqlens"] = testing.cu_seqlens(lengths, device=device)
    case["use_qk_l2norm"] = l2
    case["scale"] = dk**-0.5
    case["do"] = testing.randn([t, hv, dv], generator=gen, device=device).to(dtype)
    case["dht"] = testing.randn([len(lengths), hv, dk, dv], generator=gen, device=device)
    return case


def _leaves(case):
    return {n: case[n] for n in NAMES if case[n] is not None}


def _with_grads(case, o, fs, leaves):
    loss = (o.double() * case["do"].double()).sum() + (fs.double() * case["dht"].double()).sum()
    grads = torch.autograd.grad(loss, list(leaves.values()))
    out = {"o": o.detach(), "final_state": fs.detach()}
    out.update({"d" + n: gr for n, gr in zip(leaves, grads, strict=True)})
    return out


def run_chunked(case):
    o, fs = ops.gated_delta_fwd_gk(
        *(case[n] for n in NAMES),
        case["cu_seqlens"],
        case["scale"],
        case["use_qk_l2norm"],
    )
    return _with_grads(case, o, fs, _leaves(case))


def run_reference(case, cast=None, compute_dtype=None):
    leaves = {}
    for n, x in _leaves(case).items():
        y = x.detach()
        if cast is not None and (n in ("q", "k", "v") or cast == torch.float64):
            y = y.to(cast)
        leaves[n] = y.requires_grad_(True)
    o, fs = gated_delta_reference(
        *(leaves[n] for n in ("q", "k", "v", "g", "beta")),
        case["cu_seqlens"],
        scale=case["scale"],
        initial_state=leaves.get("initial_state"),
        use_qk_l2norm=case["use_qk_l2norm"],
        gk=leaves["gk"],
        compute_dtype=compute_dtype,
    )
    return _with_grads(case, o, fs, leaves)


def check_against_reference(case, dtype, run=run_chunked):
    got = run(case)
    gold = run_reference(case, cast=torch.float64)
    lowp = run_reference(case, cast=dtype, compute_dtype=None if dtype == torch.float32 else dtype)
    assert got.keys() == gold.keys()
    for name in gold:
        testing.assert_finite_where(name, got[name])
        testing.check_close(f"chunked gk {name}", got[name], gold[name], lowp[name])


CASES = {
    # partial chunks (63/65/130), an empty and a length-1 sequence, g and gk together (one value head: GVA with
    # g and gk is strong-gva3-vblocks, GVA with l2norm and a state random seed 101; session 30 CI time; K = 16,
    # one key tile: several tiles are strong-k64-l2 and k-not-pow2-l2, session 34 CI time)
    "odd-l2-init-g": dict(
        lengths=[63, 0, 65, 1, 130],
        h=1,
        hv=1,
        dk=16,
        dv=16,
        with_init=True,
        l2=True,
        with_g=True,
        strong=False,
    ),
    # gk alone (zero g), no state, raw q/k, two q/k heads, an exact chunk
    "gk-only-raw": dict(
        lengths=[1, 64, 0, 30], h=2, hv=2, dk=16, dv=32, with_init=False, l2=False, with_g=False, strong=False
    ),
    # strongly negative gates: chunk sums of gk reach ~ -250; GVA 3, V in several blocks, raw q/k
    "strong-gva3-vblocks": dict(
        lengths=[100, 5], h=1, hv=3, dk=16, dv=80, with_init=True, l2=False, with_g=True, strong=True
    ),
    # two key blocks in the dqk kernel, K not a power of two is the next case
    "strong-k64-l2": dict(
        lengths=[65, 63], h=1, hv=1, dk=64, dv=16, with_init=True, l2=True, with_g=False, strong=True
    ),
    "k-not-pow2-l2": dict(
        lengths=[40, 90], h=1, hv=1, dk=24, dv=8, with_init=True, l2=True, with_g=True, strong=False
    ),
}


def test_chunked_gk_hard_reset_gates_match_reference(device):
    # gk = -inf on one key of one token and g = -inf on another (exp = 0: a hard reset; SPEC allows gates <= 0): the
    # gk cumsum kernel floors g + gk at common.GATE_FLOOR (without it the rest of the chunk's head was NaN)
    case = make_case(
        [70, 20], 1, 2, 16, 16, dtype=torch.float32, with_init=True, l2=True, with_g=True, strong=False, seed=45,
        device=device,
    )  # fmt: skip
    with torch.no_grad():
        case["gk"][10, 0, 3] = float("-inf")
        case["g"][75, 1] = float("-inf")
    check_against_reference(case, torch.float32)


# fp32 here; fp16 gk runs in the random batches (odd lengths, GVA, random flags incl. strong gates), the
# single-token case and test_fp32_route / test_api_fuzz (interpreter time: the gk kernels are its slowest)
@pytest.mark.parametrize("name", list(CASES), ids=[f"{n}-fp32" for n in CASES])
def test_chunked_gk_matches_reference(name, device):
    case = make_case(dtype=torch.float32, seed=zlib.crc32(name.encode()) % 1000, device=device, **CASES[name])
    check_against_reference(case, torch.float32)


# more seeds on demand: GD_GK_SEEDS=202,1,2,3 (seeds 1-10 passed when the test was written; 202 ran in CI until
# session 36, which cut it for CI time: 23 s)
RANDOM_SEEDS = [101] + [int(x) for x in os.environ.get("GD_GK_SEEDS", "").split(",") if x]


@pytest.mark.parametrize("seed", RANDOM_SEEDS)
def test_chunked_gk_random_batches(seed, device):
    # random jagged batch (empty sequences at both ends and inside, a length-1 and a 65 sequence)
    # and random flags; fp16 so the rule's yardstick is the half-precision run
    gen = torch.Generator().manual_seed(seed)
    pick = lambda n: int(torch.randint(0, n, (1,), generator=gen))  # noqa: E731
    lengths = testing.random_lengths("empties", batch=4, max_len=90, seed=seed) + [1, 65]
    hv = (1, 2)[pick(2)]
    case = make_case(
        lengths, 1, hv, 16, 16, dtype=torch.float16, with_init=bool(pick(2)), l2=bool(pick(2)),
        with_g=bool(pick(2)), strong=bool(pick(2)), seed=seed, device=device,
    )  # fmt: skip
    check_against_reference(case, torch.float16)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=["fp32", "fp16"])
def test_chunked_gk_single_token_without_state(dtype, device):
    # one sequence of one token, no initial state: nothing depends on the gates, so the gold dg and dgk
    # are exactly 0 and the rule's floor is 0; cancelling gate terms once left ~3e-8 here (fuzz seeds
    # 5012 / 6002, both at K = 16: one key tile, CI time)
    case = make_case(
        [1], 1, 2, 16, 8, dtype=dtype, with_init=False, l2=False, with_g=True, strong=False, seed=6002,
        device=device,
    )  # fmt: skip
    check_against_reference(case, dtype)


def test_chunked_gk_equals_recurrent_forward(device):
    # strong gates (mild ones: the reference tests' forward); K = 16 (CI time: the chunked forward's cost is
    # its key tiles; several are in test_chunked_gk_matches_reference)
    case = make_case(
        [63, 0, 65, 1, 130], 1, 2, 16, 16, dtype=torch.float32, with_init=True, l2=True, with_g=True,
        strong=True, seed=31, device=device,
    )  # fmt: skip
    args = [case[n].detach() for n in NAMES]
    cu, scale = case["cu_seqlens"], case["scale"]
    o_c, fs_c = ops.gated_delta_fwd_gk(*args, cu, scale, True)
    o_r, fs_r = ops.gated_delta_fwd_recurrent(*args[:5], args[5], args[6], cu, scale, True)
    torch.testing.assert_close(o_c, o_r, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(fs_c, fs_r, rtol=1e-4, atol=1e-5)


def test_gk_ops_schema_fake_and_autograd_registration(device):
    # the CPU part of opcheck (the AOT-dispatch checks need real kernels on fake tensors, which the
    # interpreter cannot run: they are in test_gpu_gk_opcheck). One chunk (each util runs the ops: CI time);
    # still two sequences (one empty) and GVA for the fake impls' shapes
    case = make_case(
        [10, 0], 1, 2, 16, 16, dtype=torch.float32, with_init=True, l2=True, with_g=True, strong=False,
        seed=5, device=device,
    )  # fmt: skip
    utils = ("test_schema", "test_autograd_registration", "test_faketensor")
    args = (*(case[n] for n in NAMES), case["cu_seqlens"], 16**-0.5, True)
    torch.library.opcheck(ops.gated_delta_fwd_gk, args, test_utils=utils)
    bwd_args = (
        *(a.detach() if torch.is_tensor(a) else a for a in args[:8]),
        case["do"],
        case["dht"],
        16**-0.5,
        True,
    )
    torch.library.opcheck(ops.gated_delta_bwd_gk, bwd_args, test_utils=utils)
    # the keep variant: its forward's T^-1, P into its backward
    torch.library.opcheck(ops.gated_delta_fwd_gk_keep, args, test_utils=utils)
    with torch.no_grad():
        _, _, ainv, pqk = ops.gated_delta_fwd_gk_keep(*bwd_args[:8], 16**-0.5, True)
    keep_args = (*bwd_args[:8], ainv, pqk, *bwd_args[8:])
    torch.library.opcheck(ops.gated_delta_bwd_gk_keep, keep_args, test_utils=utils)


def test_gk_keep_is_bitwise_the_recompute(device, monkeypatch):
    # the kept T^-1 and P are what the backward's kkt launch would recompute: the keep ops give bitwise the plain
    # ops' outputs and gradients; the backend takes them when a backward can follow, the plain op otherwise
    # (CI time: a partial chunk, a sequence across a chunk boundary, an empty and a length-1 one)
    lengths = [20, 0, 70, 1]
    case = make_case(
        lengths, 1, 2, 16, 16, dtype=torch.float32, with_init=True, l2=True, with_g=True, strong=True, seed=38,
        device=device,
    )  # fmt: skip
    args = (*(case[n] for n in NAMES), case["cu_seqlens"], case["scale"], True)
    leaves = _leaves(case)
    o, fs = ops.gated_delta_fwd_gk(*args)
    plain = _with_grads(case, o, fs, leaves)
    o, fs, ainv, pqk = ops.gated_delta_fwd_gk_keep(*args)
    assert ainv.shape == pqk.shape == (case["v"].shape[0], 2, 64) and ainv.dtype == torch.float32
    kept = _with_grads(case, o, fs, leaves)
    for name, x in plain.items():
        assert torch.equal(x, kept[name]), name
    with pytest.raises(ValueError, match="pqk must be"):
        ops.gated_delta_bwd_gk_keep(
            *(a.detach() if torch.is_tensor(a) else a for a in args[:8]), ainv, pqk[:, :1],
            case["do"], None, case["scale"], True,
        )  # fmt: skip
    calls = []

    def spy(op, tag):
        def call(*a):
            calls.append(tag)
            return op(*a)

        return call

    monkeypatch.setattr(ops, "gated_delta_fwd_gk_keep", spy(ops.gated_delta_fwd_gk_keep, "keep"))
    monkeypatch.setattr(ops, "gated_delta_fwd_gk", spy(ops.gated_delta_fwd_gk, "plain"))
    # (fp16: fp32 with gradients runs the reference backend.) The forward alone: the choice is made there, from the
    # inputs' requires_grad (CI time; the public path's keep backward under the SPEC rule is
    # test_public_api_gk_with_gradients_runs_chunked_triton's)
    case = make_case(
        lengths, 1, 2, 16, 16, dtype=torch.float16, with_init=True, l2=True, with_g=True, strong=True, seed=38,
        device=device,
    )  # fmt: skip
    o, _ = jagattn.gated_delta_rule(
        *(case[n] for n in ("q", "k", "v", "g", "beta")), cu_seqlens=case["cu_seqlens"], scale=case["scale"],
        initial_state=case["initial_state"], output_final_state=True, use_qk_l2norm=True, gk=case["gk"],
    )  # fmt: skip
    assert calls == ["keep"] and o.requires_grad
    with torch.no_grad():  # 91 tokens as one sequence: the chunked forward (the token loop takes short ones)
        cu = torch.tensor([0, sum(lengths)], device=device)
        run = [case[n].detach() for n in ("q", "k", "v", "g", "beta")]
        jagattn.gated_delta_rule(*run, cu_seqlens=cu, gk=case["gk"].detach(), backend="triton")
    assert calls == ["keep", "plain"]  # no backward can follow: nothing kept


# ---------------------------------------------------------------------------------------------
# the public API and dispatch


def run_public(case):
    o, fs = jagattn.gated_delta_rule(
        *(case[n] for n in ("q", "k", "v", "g", "beta")),
        cu_seqlens=case["cu_seqlens"],
        scale=case["scale"],
        initial_state=case["initial_state"],
        output_final_state=True,
        use_qk_l2norm=case["use_qk_l2norm"],
        gk=case["gk"],
        backend="auto",
    )
    return _with_grads(case, o, fs, _leaves(case))


def test_public_api_gk_with_gradients_runs_chunked_triton(device):
    case = make_case(
        [40, 1, 0, 70], 1, 2, 16, 16, dtype=torch.float16, with_init=True, l2=True, with_g=True, strong=False,
        seed=41, device=device,
    )  # fmt: skip
    args = [case[n] for n in ("q", "k", "v", "g", "beta")]
    kw = dict(cu_seqlens=case["cu_seqlens"], initial_state=case["initial_state"], gk=case["gk"])
    assert jagattn.explain("gated_delta", *args, **kw).chosen == "triton"
    inputs = jagattn.gated_delta.api.make_inputs(*args, **kw)
    assert not TritonBackend.use_recurrent(inputs)
    check_against_reference(case, torch.float16, run=run_public)


def test_gk_forward_dispatch_by_length(device):
    # without gradients: short sequences (average <= RECURRENT_MAX_AVG_LEN_GK with gk) take the recurrent
    # kernel, longer the chunked; the boundary on both sides
    lim = jagattn.gated_delta.backends.RECURRENT_MAX_AVG_LEN_GK
    cases = (([3, 9, 1], True), ([lim - 3, lim + 3], True), ([lim - 2, lim + 3], False), ([200], False))
    for lengths, recurrent in cases:
        case = make_case(
            lengths, 1, 1, 16, 16, dtype=torch.float32, with_init=False, l2=False, with_g=True, strong=False,
            seed=42, device=device,
        )  # fmt: skip
        args = [case[n].detach() for n in ("q", "k", "v", "g", "beta")]
        with torch.no_grad():
            inputs = jagattn.gated_delta.api.make_inputs(
                *args, cu_seqlens=case["cu_seqlens"], gk=case["gk"].detach()
            )
            assert TritonBackend.use_recurrent(inputs) == recurrent


# ---------------------------------------------------------------------------------------------
# GPU only: production size in bf16 on the device's Triton, opcheck


def _rand_lengths(total, n, seed):
    gen = torch.Generator().manual_seed(seed)
    cuts = torch.randperm(total - 1, generator=gen)[: n - 1].sort().values + 1
    edges = [0] + cuts.tolist() + [total]
    return [b - a for a, b in zip(edges[:-1], edges[1:], strict=True)]


@pytest.mark.gpu
@pytest.mark.parametrize(
    "lengths,h,hv,strong",
    [
        (_rand_lengths(32768, 8, 1), 1, 2, False),  # 32k tokens, 8 sequences, GVA 2, g + gk
        ([0, 1, 63, 64, 65, 130, 700, 0, 300], 2, 4, True),  # odd lengths, more heads, strong gates
    ],
    ids=["gk-32k-8seqs-gva2", "gk-odd-multihead-strong"],
)
def test_gpu_gk_production_bf16(lengths, h, hv, strong):
    case = make_case(
        lengths, h, hv, 128, 128, dtype=torch.bfloat16, with_init=True, l2=True, with_g=True, strong=strong,
        seed=8, device="cuda",
    )  # fmt: skip
    got = run_chunked(case)
    gold = run_reference(case, cast=torch.float32)
    for name in gold:
        testing.assert_finite_where(name, got[name])
    lowp = run_reference(case, cast=torch.bfloat16, compute_dtype=torch.bfloat16)
    for name in gold:
        testing.check_close(f"chunked gk {name}", got[name], gold[name], lowp[name])


@pytest.mark.gpu
@pytest.mark.parametrize("dk,dv", [(64, 64), (128, 128)], ids=["64", "128"])
def test_gpu_gk_fp16_small(dk, dv):
    # K = V = 128: the split-tf32 state passes needed 242 KB of shared memory at two stages, over the
    # H200's 227 KB (OutOfResources for every fp16 batch with gk at K=128 until session 13)
    case = make_case(
        [63, 0, 65, 1, 300], 2, 4, dk, dv, dtype=torch.float16, with_init=True, l2=True, with_g=True,
        strong=True, seed=3, device="cuda",
    )  # fmt: skip
    check_against_reference(case, torch.float16)


@pytest.mark.gpu
def test_gpu_gk_opcheck():
    case = make_case(
        [10, 0, 70], 1, 2, 32, 32, dtype=torch.bfloat16, with_init=True, l2=True, with_g=True, strong=False,
        seed=5, device="cuda",
    )  # fmt: skip
    args = (*(case[n] for n in NAMES), case["cu_seqlens"], 32**-0.5, True)
    torch.library.opcheck(ops.gated_delta_fwd_gk, args)
    no_state = args[:6] + (None,) + args[7:]
    torch.library.opcheck(ops.gated_delta_fwd_gk, no_state)
    bwd_args = (
        *(a.detach() if torch.is_tensor(a) else a for a in args[:8]),
        case["do"],
        case["dht"],
        32**-0.5,
        True,
    )
    torch.library.opcheck(ops.gated_delta_bwd_gk, bwd_args)
    torch.library.opcheck(ops.gated_delta_fwd_gk_keep, args)
    with torch.no_grad():
        _, _, ainv, pqk = ops.gated_delta_fwd_gk_keep(*bwd_args[:8], 32**-0.5, True)
    torch.library.opcheck(ops.gated_delta_bwd_gk_keep, (*bwd_args[:8], ainv, pqk, *bwd_args[8:]))


@pytest.mark.gpu
def test_gpu_gk_compile_fullgraph():
    case = make_case(
        [100, 0, 300], 2, 4, 64, 64, dtype=torch.bfloat16, with_init=True, l2=True, with_g=True, strong=False,
        seed=6, device="cuda",
    )  # fmt: skip

    def f(q, k, v, g, beta, gk, cu, h0):
        return jagattn.gated_delta_rule(
            q, k, v, g, beta, cu_seqlens=cu, initial_state=h0, output_final_state=True, use_qk_l2norm=True,
            gk=gk, backend="triton",
        )  # fmt: skip

    args = [case[n] for n in ("q", "k", "v", "g", "beta", "gk", "cu_seqlens", "initial_state")]
    o_c, fs_c = torch.compile(f, fullgraph=True)(*args)
    o_e, fs_e = f(*args)
    # the same kernels, but Inductor compiles them with its own argument specialisation (the alignment of the
    # buffers it allocates), which can change a layout and with it an fp32 reduction order: compiled and eager
    # agree to rounding, not always bitwise (session 38: the 2-warp kkt, 1 bf16 ulp on 4 of 102400 elements)
    o_diff = (o_c.float() - o_e.float()).abs()
    assert (o_diff <= 2**-6 * o_e.float().abs() + 1e-3 * o_e.float().abs().max()).all(), o_diff.max()
    assert (o_diff > 0).float().mean() <= 1e-3, (o_diff > 0).sum()
    torch.testing.assert_close(fs_c, fs_e, rtol=1e-5, atol=1e-5 * fs_e.abs().max().item())
    (o_c.float().sum() + fs_c.sum()).backward()
    assert all(case[n].grad is not None for n in NAMES)
