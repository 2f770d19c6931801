"""fp32 training of the gated delta rule on the Triton token loop (``backends.FP32_TRAIN = "recurrent"``, the default
since session 53).

The chunked backward misses the SPEC rule against an fp32 reference on some inputs, so fp32 inputs with gradients
run the token loop instead: they run ``ops.gated_delta_fwd_recurrent_train`` / ``gated_delta_bwd_recurrent`` (``triton/recurrent.py``): the
forward stores the state entering every 16th token, the backward walks the tokens last first and replays each
block from its checkpoint. CPU tests run the kernels under the interpreter against the reference's autograd with
the SPEC section 5 rule (fp64 gold, the fp32 reference as yardstick); the gpu tests the same, opcheck and compile.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import jagattn
from jagattn import NotSupportedError, testing
from jagattn.gated_delta import backends, ops
from jagattn.gated_delta.reference import gated_delta_reference
from jagattn.gated_delta.triton import recurrent

NAMES = ("q", "k", "v", "g", "beta", "gk", "initial_state")


def make_case(lengths, h, hv, dk, dv, *, with_gk, with_init, l2, seed, device="cpu", strong=False):
    """Random fp32 leaves requiring grad. Without l2norm k has unit-ish rows (a bounded recurrence); ``strong``:
    gk ~ -U(0, 8) (states forgotten within a few tokens)."""
    gen = testing.generator(seed)
    t = sum(lengths)
    case = {
        "q": testing.randn([t, h, dk], generator=gen, device=device),
        "k": testing.randn([t, h, dk], generator=gen, device=device, scale=1.0 if l2 else dk**-0.5),
        "v": testing.randn([t, hv, dv], generator=gen, device=device),
        "g": F.logsigmoid(testing.randn([t, hv], generator=gen) + 2.0).to(device),
        "beta": torch.sigmoid(testing.randn([t, hv], generator=gen)).to(device),
        "gk": None,
        "initial_state": testing.randn([len(lengths), hv, dk, dv], generator=gen, device=device)
        if with_init
        else None,
    }
    if with_gk:
        gk = (
            -8.0 * torch.rand(t, hv, dk, generator=gen)
            if strong
            else F.logsigmoid(testing.randn([t, hv, dk], generator=gen) + 3.0)
        )
        case["gk"] = gk.to(device)
    for n in NAMES:
        if case[n] is not None:
            case[n].requires_grad_(True)
    case["cu_seqlens"] = testing.cu_seqlens(lengths, device=device)
    case["l2"] = l2
    case["do"] = testing.randn([t, hv, dv], generator=gen, device=device)
    case["dht"] = testing.randn([len(lengths), hv, dk, dv], generator=gen, device=device)
    return case


def _leaves(case, cast=None):
    out = {}
    for n in NAMES:
        if case[n] is not None:
            x = case[n].detach()
            out[n] = (x.to(cast) if cast is not None else x.clone()).requires_grad_(True)
    return out


def _grads(case, o, fs, leaves):
    loss = (o.double() * case["do"].double()).sum() + (fs.double() * case["dht"].double()).sum()
    grads = torch.autograd.grad(loss, list(leaves.values()))
    out = {"o": o.detach(), "final_state": fs.detach()}
    out.update({"d" + n: gr for n, gr in zip(leaves, grads, strict=True)})
    return out


def run_public(case, backend):
    leaves = _leaves(case)
    o, fs = jagattn.gated_delta_rule(
        *(leaves[n] for n in ("q", "k", "v", "g", "beta")),
        cu_seqlens=case["cu_seqlens"],
        initial_state=leaves.get("initial_state"),
        output_final_state=True,
        use_qk_l2norm=case["l2"],
        gk=leaves.get("gk"),
        backend=backend,
    )
    return _grads(case, o, fs, leaves)


def run_reference(case, cast):
    leaves = _leaves(case, cast)
    o, fs = gated_delta_reference(
        *(leaves[n] for n in ("q", "k", "v", "g", "beta")),
        case["cu_seqlens"],
        initial_state=leaves.get("initial_state"),
        use_qk_l2norm=case["l2"],
        gk=leaves.get("gk"),
    )
    return _grads(case, o, fs, leaves)


def check(case):
    got = run_public(case, "triton")
    gold = run_reference(case, torch.float64)
    lowp = run_reference(case, torch.float32)
    assert got.keys() == gold.keys()
    for name in gold:
        assert got[name].dtype == lowp[name].dtype, name
        testing.assert_finite_where(name, got[name])
        testing.check_close(f"fp32 train {name}", got[name], gold[name], lowp[name])


@pytest.fixture
def recurrent_train(monkeypatch):
    monkeypatch.setattr(backends, "FP32_TRAIN", "recurrent")


CASES = {
    # checkpoint edges (15, 16, 17, 33 tokens), an empty and a length-1 sequence, GVA 2, g and gk, l2norm, a state
    "edges-gva-gk-l2-init": dict(
        lengths=[15, 0, 16, 1, 17, 33], h=1, hv=2, dk=16, dv=24, with_gk=True, with_init=True, l2=True
    ),  # fmt: skip
    # scalar g only, raw q/k, no state, V in two blocks of 16, K not a power of two
    "scalar-raw-vblocks": dict(
        lengths=[40, 2], h=2, hv=2, dk=24, dv=20, with_gk=False, with_init=False, l2=False
    ),
    # strongly negative per-key gates (exp(gk) underflows within a few tokens), GVA 3
    "strong-gk-gva3": dict(
        lengths=[31, 5], h=1, hv=3, dk=16, dv=8, with_gk=True, with_init=True, l2=False, strong=True
    ),  # fmt: skip
}


@pytest.mark.parametrize("name", list(CASES))
def test_fp32_train_matches_reference(name, recurrent_train, device):
    check(make_case(**CASES[name], seed=520 + list(CASES).index(name), device=device))


def test_fp32_train_v_blocks_of_32(recurrent_train, monkeypatch, device):
    # the backward's other launch-config candidate (common.CANDIDATES["bwd_recurrent"]): V blocks of 32 at 8 warps,
    # two V blocks at V = 40, with gk and GVA
    from jagattn.gated_delta.triton import common

    monkeypatch.setitem(common.CONFIG_OVERRIDE, "bwd_recurrent", common.CANDIDATES["bwd_recurrent"][1])
    check(
        make_case([17, 0, 30], 1, 2, 16, 40, with_gk=True, with_init=True, l2=True, seed=536, device=device)
    )


def test_fp32_train_hard_reset_gates(recurrent_train, device):
    # g = -inf and gk = -inf on single tokens (exp = 0: the state is reset; SPEC allows gates <= 0): no NaN
    case = make_case([20, 18], 1, 1, 16, 16, with_gk=True, with_init=True, l2=True, seed=527, device=device)
    with torch.no_grad():
        case["g"][5, 0] = float("-inf")
        case["gk"][25, 0, 3] = float("-inf")
    check(case)


def test_fp32_train_without_final_state_or_output_gradient(recurrent_train, device):
    # only o used (no final-state gradient: dht None in the kernel), then only the final state (do None -> zeros)
    case = make_case([19, 3], 1, 2, 16, 16, with_gk=False, with_init=True, l2=True, seed=528, device=device)
    for use in ("o", "final_state"):
        got_l, ref_l = _leaves(case), _leaves(case, torch.float64)
        outs = []
        for leaves, fn in ((got_l, "triton"), (ref_l, None)):
            args = [leaves[n] for n in ("q", "k", "v", "g", "beta")]
            if fn:
                o, fs = jagattn.gated_delta_rule(
                    *args, cu_seqlens=case["cu_seqlens"], initial_state=leaves["initial_state"],
                    output_final_state=True, use_qk_l2norm=True, backend="triton",
                )  # fmt: skip
            else:
                o, fs = gated_delta_reference(
                    *args, case["cu_seqlens"], initial_state=leaves["initial_state"], use_qk_l2norm=True
                )
            y = o if use == "o" else fs
            outs.append(torch.autograd.grad((y.double() * 0.5).sum(), list(leaves.values())))
        for n, a, b in zip(got_l, *outs, strict=True):
            torch.testing.assert_close(a.double(), b, rtol=1e-4, atol=1e-5, msg=f"{use}: d{n}")


def test_fp32_train_routing_and_reasons(monkeypatch, device):
    # switched off ("reference"): the triton backend refuses fp32 with gradients and says how to switch it back on;
    # with "recurrent" (the default) it takes them through the training op (and fp32 without gradients still takes
    # the forward-only token loop)
    case = make_case([9, 4], 1, 1, 16, 16, with_gk=False, with_init=False, l2=False, seed=529, device=device)
    args = [case[n] for n in ("q", "k", "v", "g", "beta")]
    monkeypatch.setattr(backends, "FP32_TRAIN", "reference")
    ex = jagattn.explain("gated_delta", *args, cu_seqlens=case["cu_seqlens"])
    assert ex.chosen == "reference"
    assert "JAGATTN_GD_FP32_TRAIN=reference" in str(ex) and "set it to recurrent" in str(ex)
    with pytest.raises(NotSupportedError, match="fp32 with gradients"):
        jagattn.gated_delta_rule(*args, cu_seqlens=case["cu_seqlens"], backend="triton")
    monkeypatch.setattr(backends, "FP32_TRAIN", "recurrent")
    assert jagattn.explain("gated_delta", *args, cu_seqlens=case["cu_seqlens"]).chosen == "triton"
    seen = []
    for op in ("gated_delta_fwd_recurrent_train", "gated_delta_fwd_recurrent"):
        real = getattr(ops, op)
        monkeypatch.setattr(ops, op, lambda *a, _r=real, _n=op: (seen.append(_n), _r(*a))[1])
    o, _ = jagattn.gated_delta_rule(*args, cu_seqlens=case["cu_seqlens"], backend="triton")
    assert o.grad_fn is not None
    with torch.no_grad():
        jagattn.gated_delta_rule(*args, cu_seqlens=case["cu_seqlens"], backend="triton")
    assert seen == ["gated_delta_fwd_recurrent_train", "gated_delta_fwd_recurrent"], seen


def test_fp32_train_checkpoints_are_the_token_loop_states(device):
    # the forward's checkpoints: slot cu[s] // 16 + s + i holds the state entering token 16 i of sequence s (the
    # initial state for i = 0), bitwise the state the forward-only kernel reaches after those tokens
    ck = recurrent.CKPT_TOKENS
    lengths = [0, 17, 33, 16]
    case = make_case(lengths, 1, 2, 16, 8, with_gk=True, with_init=True, l2=True, seed=530, device=device)
    x = {n: (case[n].detach() if case[n] is not None else None) for n in NAMES}
    cu = case["cu_seqlens"]
    with torch.no_grad():
        o, fs, ckpt = ops.gated_delta_fwd_recurrent_train(
            x["q"], x["k"], x["v"], x["g"], x["beta"], x["gk"], x["initial_state"], cu, 16**-0.5, True
        )
    assert ckpt.shape == (recurrent.ckpt_slots(sum(lengths), len(lengths)), 2, 16, 8)
    starts = cu.tolist()
    for s, length in enumerate(lengths):
        for i in range(-(-length // ck)):
            slot = starts[s] // ck + s + i
            end = starts[s] + i * ck
            part = torch.tensor([starts[s], end], dtype=cu.dtype, device=cu.device)
            h0 = x["initial_state"][s : s + 1]
            _, state = recurrent.recurrent_fwd(
                x["q"][starts[s] : end].contiguous(), x["k"][starts[s] : end].contiguous(),
                x["v"][starts[s] : end].contiguous(), x["g"][starts[s] : end].contiguous(),
                x["beta"][starts[s] : end].contiguous(), x["gk"][starts[s] : end].contiguous(), h0.contiguous(),
                part - starts[s], 16**-0.5, True,
            )  # fmt: skip
            assert torch.equal(ckpt[slot], state[0]), (s, i)
    # every slot is written (opcheck compares the whole output; the suite poisons new buffers with NaN): the one
    # slot between a sequence's last checkpoint and the next sequence's first, where there is one, holds the final
    # state (here after the empty sequence and the 16 tokens from 50; sequences 1 and 2 fill their ranges)
    assert not ckpt.isnan().any()
    gaps = []
    for s, length in enumerate(lengths):
        slot = starts[s] // ck + s + -(-length // ck)
        if slot < starts[s + 1] // ck + s + 1:
            gaps.append(s)
            assert torch.equal(ckpt[slot], fs[s]), s
    assert gaps == [0, 3], gaps


def test_fp32_train_ops_schema_and_autograd_registration(device):
    """Full opcheck needs a GPU (fake tracing cannot run the interpreter); see the gpu test."""
    case = make_case([5, 0, 18], 1, 2, 16, 8, with_gk=True, with_init=True, l2=True, seed=531, device=device)
    args = (*(case[n] for n in NAMES), case["cu_seqlens"], 16**-0.5, True)
    utils = ("test_schema", "test_autograd_registration")
    torch.library.opcheck(torch.ops.jagattn.gated_delta_fwd_recurrent_train.default, args, test_utils=utils)
    with torch.no_grad():
        _, _, ckpt = ops.gated_delta_fwd_recurrent_train(*args)
    bwd = (*(a.detach() if torch.is_tensor(a) else a for a in args[:8]), ckpt, case["do"], case["dht"], 16**-0.5,
           True)  # fmt: skip
    torch.library.opcheck(
        torch.ops.jagattn.gated_delta_bwd_recurrent.default, bwd, test_utils=("test_schema",)
    )


# ---------------------------------------------------------------------------------------------
# GPU (device): larger batches, opcheck, compile


@pytest.mark.gpu
@pytest.mark.parametrize("with_gk", [False, True], ids=["g", "gk"])
def test_gpu_fp32_train_matches_reference(with_gk, recurrent_train):
    case = make_case([300, 1, 0, 77, 513], 2, 4, 64, 64, with_gk=with_gk, with_init=True, l2=True, seed=532,
                     device="cuda")  # fmt: skip
    check(case)


@pytest.mark.gpu
def test_gpu_fp32_train_opcheck():
    case = make_case(
        [40, 0, 70], 1, 2, 32, 32, with_gk=True, with_init=True, l2=True, seed=533, device="cuda"
    )
    args = (*(case[n] for n in NAMES), case["cu_seqlens"], 32**-0.5, True)
    torch.library.opcheck(ops.gated_delta_fwd_recurrent_train, args)
    with torch.no_grad():
        _, _, ckpt = ops.gated_delta_fwd_recurrent_train(*args)
    bwd = (*(a.detach() if torch.is_tensor(a) else a for a in args[:8]), ckpt, case["do"], case["dht"], 32**-0.5,
           True)  # fmt: skip
    torch.library.opcheck(ops.gated_delta_bwd_recurrent, bwd)


@pytest.mark.gpu
def test_gpu_fp32_train_compile_fullgraph(recurrent_train):
    case = make_case(
        [100, 0, 37], 2, 2, 32, 32, with_gk=False, with_init=True, l2=True, seed=534, device="cuda"
    )

    def f(q, k, v, g, beta, cu, h0):
        return jagattn.gated_delta_rule(
            q, k, v, g, beta, cu_seqlens=cu, initial_state=h0, output_final_state=True, use_qk_l2norm=True,
            backend="triton",
        )  # fmt: skip

    args = [case[n] for n in ("q", "k", "v", "g", "beta", "cu_seqlens", "initial_state")]
    o_c, fs_c = torch.compile(f, fullgraph=True)(*args)
    o_e, fs_e = f(*args)
    torch.testing.assert_close(o_c, o_e, rtol=0, atol=0)
    torch.testing.assert_close(fs_c, fs_e, rtol=0, atol=0)
    leaves = [case[n] for n in ("q", "k", "v", "g", "beta", "initial_state")]
    gc = torch.autograd.grad(o_c.sum() + fs_c.sum(), leaves)
    ge = torch.autograd.grad(o_e.sum() + fs_e.sum(), leaves)
    for a, b in zip(gc, ge, strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=0)


def test_fp32_train_rejects_nothing_new(recurrent_train, device):
    # the opt-in changes no validation: a bad gk shape is still a ValueError naming gk
    case = make_case([4], 1, 1, 16, 16, with_gk=True, with_init=False, l2=False, seed=535, device=device)
    with pytest.raises(ValueError, match="gk"):
        jagattn.gated_delta_rule(
            *(case[n] for n in ("q", "k", "v", "g", "beta")), cu_seqlens=case["cu_seqlens"],
            gk=case["gk"][:, :, :8], backend="triton",
        )  # fmt: skip
