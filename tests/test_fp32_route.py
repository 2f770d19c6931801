"""The fp32 route of tiny fp16/bf16 batches (``jagattn/_core/precision.py``): which calls take it, that
every Triton launch then sees fp32 tensors only while the caller gets outputs and gradients in the input
dtype, and that it removes failures of the SPEC section 5 rule that the half-precision kernels have on
batches of one-token sequences (random cases of ``benchmarks/fuzz_spec_rule.py``).

conftest.py turns the route off for the rest of the suite (whose small batches test the half-precision
kernels); these tests turn it back on."""

from __future__ import annotations

import importlib

import pytest
import torch

from conftest import load_fuzz_script
from jagattn._core import precision
from jagattn._core.precision import fp32_route, upcast


@pytest.fixture(scope="module")
def fuzz():
    mod = load_fuzz_script()
    # The loss weights (output gradients) rounded to each output's dtype for the gold too: with exact fp64
    # weights the op receives a rounded gradient the gold does not, and on tiny batches even the fp32
    # reference rounded once then fails the rule (harness noise, session 15: gated delta [3, 0] dg on the
    # H200). Every assertion below is about the kernels, so the harness must not add its own error.
    mod.ROUNDED_GRADS = True
    return mod


@pytest.fixture
def route(monkeypatch):
    """``route(mode)`` sets the route's switch (``auto`` / ``on`` / ``off``) for this test."""
    return lambda mode: monkeypatch.setattr(precision, "SMALL_FP32", mode)


def test_rule(route, monkeypatch):
    monkeypatch.setattr(precision, "interpreter_enabled", lambda: False)  # the size rule (a GPU's)
    route("auto")
    for dt in (torch.float16, torch.bfloat16):
        assert fp32_route(dt, (10, 1024), 1024)
        assert not fp32_route(dt, (10, 1025), 1024)
        assert not fp32_route(dt, (10, object()), 1024)  # a symbolic size (not an int): never
    assert not fp32_route(torch.float32, (1,), 1024)
    assert not fp32_route(torch.float64, (1,), 1024)
    route("on")
    assert fp32_route(torch.bfloat16, (10**9,), 1024) and not fp32_route(torch.float32, (1,), 1024)
    route("off")
    assert not fp32_route(torch.float16, (1,), 1024)


def test_bf16_interpreter_always_fp32_route(route, monkeypatch):
    # Triton's interpreter computes tl.dot on bf16 operands wrongly (errors ~1e9): under it bf16 takes the fp32 route
    # at every size and with the route switched off, fp16 keeps the size rule
    monkeypatch.setattr(precision, "interpreter_enabled", lambda: True)
    for mode in ("auto", "off"):
        route(mode)
        assert fp32_route(torch.bfloat16, (10**9,), 1024)
        assert fp32_route(torch.bfloat16, (object(),), 1024)  # symbolic sizes too: not a size test
        assert fp32_route(torch.float16, (10,), 1024) == (mode == "auto")
        assert not fp32_route(torch.float16, (10**9,), 1024)


def test_bf16_cpu_batches_past_the_limit_match_the_reference(device):
    # what the rule above prevents: session 27 found bf16 CPU batches past 1024 token-heads off by ~7e8 (attention,
    # HSTU) or NaN (gated delta) through backend "auto"
    import jagattn
    from jagattn import testing

    if device != "cpu":
        pytest.skip("the interpreter's defect")
    gen = testing.generator(27)
    n = 700  # x 2 heads: past the fp32 route's size limit
    cu = testing.cu_seqlens([n], device)
    q, k, v = (testing.randn([n, 2, 16], dtype=torch.bfloat16, generator=gen) for _ in "qkv")
    kn = torch.nn.functional.normalize(k.float(), dim=-1).bfloat16()
    g = torch.nn.functional.logsigmoid(testing.randn([n, 2], generator=gen))
    beta = torch.rand(n, 2, generator=gen)
    calls = {
        "attention": lambda b: jagattn.attention(q, k, v, cu, cu, n, n, causal=True, backend=b),
        "hstu": lambda b: jagattn.hstu_attention(q, k, v, cu, n, alpha=0.25, backend=b),
        "gated_delta": lambda b: jagattn.gated_delta_rule(kn, kn, v, g, beta, cu_seqlens=cu, backend=b)[0],
    }
    for name, call in calls.items():
        out, ref = call("auto"), call("reference")
        assert out.dtype == torch.bfloat16
        assert (out.float() - ref.float()).abs().max().item() <= 2e-2 * ref.float().abs().max().item(), name


def test_upcast_passes_other_tensors_through():
    a = torch.ones(2, dtype=torch.float16, requires_grad=True)
    b = torch.ones(2, dtype=torch.int32)
    ua, ub, un = upcast(a, b, None)
    assert ua.dtype == torch.float32 and ub is b and un is None
    ua.sum().backward()
    assert a.grad.dtype == torch.float16  # differentiable: the gradient reaches the fp16 leaf


# one tiny case per op (every length capped at 3: at most 12 tokens) and a larger one per op
OPS = ["attention", "hstu", "gated_delta", "gated_delta_gk"]


def _op_input_dtypes(monkeypatch) -> set:
    """The floating dtypes of the tensors every family hands to its registered forward ops (through
    ``eager_call``) from now on. (The HSTU launchers bind ``wrap_triton`` at import, so the
    ``on_launch`` fixture does not see their kernels.)"""
    ab, gb, go, hb = (
        importlib.import_module(f"jagattn.{m}")
        for m in ("attention.backends", "gated_delta.backends", "gated_delta.ops", "hstu.backends")
    )
    seen: set = set()
    real = ab.eager_call

    def spy(op, *args):
        seen.update(a.dtype for a in args if isinstance(a, torch.Tensor) and a.dtype.is_floating_point)
        return real(op, *args)

    for mod in (ab, gb, go, hb):
        monkeypatch.setattr(mod, "eager_call", spy)
    return seen


@pytest.mark.parametrize("op", OPS)
def test_tiny_batch_runs_fp32_kernels(fuzz, op, route, monkeypatch, device):
    route("auto")
    monkeypatch.setattr(fuzz, "CAP_LEN", 3)
    monkeypatch.setattr(fuzz, "DTYPE", torch.float16)
    if op == "gated_delta_gk" and device == "cpu":
        # the gk kernels cost the interpreter per key tile of 16: K = 16 instead of seed 1's 32 (CI time; the
        # rest of the draw is the seed's, as with --dims)
        monkeypatch.setattr(fuzz, "DIMS", (16, 16))
    seen = _op_input_dtypes(monkeypatch)
    assert fuzz.run_case(op, 1, device, 1) is None  # outputs and every gradient within the rule
    assert seen and torch.float16 not in seen, seen
    route("off")
    seen.clear()
    assert fuzz.run_case(op, 1, device, 1) is None
    assert torch.float16 in seen  # without the route the same case runs the fp16 kernels


@pytest.mark.parametrize("op", OPS)
def test_outputs_and_gradients_keep_the_input_dtype(op, route, device):
    import jagattn
    from jagattn import testing

    route("auto")
    gen = testing.generator(5)
    cu = testing.cu_seqlens([2, 0, 3], device)
    t = 5
    if op == "attention":
        q, k, v = (
            testing.randn([t, 2, 16], dtype=torch.float16, device=device, generator=gen) for _ in "qkv"
        )
        leaves = [x.requires_grad_() for x in (q, k, v)]
        o, lse = jagattn.attention(q, k, v, cu, cu, 3, 3, causal=True, return_lse=True, backend="triton")
        outs = [o, lse]
        assert lse.dtype == torch.float32
    elif op == "hstu":
        q, k, v = (
            testing.randn([t, 2, 16], dtype=torch.float16, device=device, generator=gen) for _ in "qkv"
        )
        leaves = [x.requires_grad_() for x in (q, k, v)]
        outs = [jagattn.hstu_attention(q, k, v, cu, 3, alpha=0.25, backend="triton")]
    else:
        q, k = (testing.randn([t, 1, 16], dtype=torch.float16, device=device, generator=gen) for _ in "qk")
        v = testing.randn([t, 2, 16], dtype=torch.float16, device=device, generator=gen)
        g = torch.nn.functional.logsigmoid(testing.randn([t, 2], device=device, generator=gen))
        beta = torch.sigmoid(testing.randn([t, 2], device=device, generator=gen))
        gk = None
        if op == "gated_delta_gk":
            gk = torch.nn.functional.logsigmoid(testing.randn([t, 2, 16], device=device, generator=gen) + 2)
        leaves = [x.requires_grad_() for x in (q, k, v)]
        o, fs = jagattn.gated_delta_rule(
            q,
            k,
            v,
            g,
            beta,
            cu_seqlens=cu,
            output_final_state=True,
            use_qk_l2norm=True,
            gk=gk,
            backend="triton",
        )
        outs = [o, fs]
        assert fs.dtype == torch.float32
    assert outs[0].dtype == torch.float16
    sum(x.float().sum() for x in outs).backward()
    assert all(x.grad is not None and x.grad.dtype == torch.float16 for x in leaves)


def test_hstu_cached_tiny_batch_runs_fp32(route, monkeypatch, device):
    import jagattn
    from jagattn import testing
    from jagattn.hstu.reference import hstu_reference

    route("auto")
    seen = _op_input_dtypes(monkeypatch)
    gen = testing.generator(3)
    lengths, delta = [3, 1, 2], 1
    cu = testing.cu_seqlens(lengths, device)
    k, v = (testing.randn([6, 2, 16], dtype=torch.bfloat16 if device != "cpu" else torch.float16,
                          device=device, generator=gen) for _ in "kv")  # fmt: skip
    dq = testing.randn([3 * delta, 2, 16], dtype=k.dtype, device=device, generator=gen)
    with torch.no_grad():
        out = jagattn.hstu_attention_cached(dq, k, v, cu, 3, alpha=0.25, backend="triton")
    assert out.dtype == k.dtype and seen == {torch.float32}
    ref = hstu_reference(dq, k, v, cu, alpha=0.25, scale_len=3, delta=delta, compute_dtype=torch.float32)
    torch.testing.assert_close(out, ref, atol=2e-3, rtol=2e-3)


def test_large_batches_keep_the_half_kernels(route, monkeypatch, device):
    import jagattn
    from jagattn import testing

    route("auto")
    seen = _op_input_dtypes(monkeypatch)
    gen = testing.generator(4)
    cu = testing.cu_seqlens([700, 330], device)  # 1030 tokens x 1 head: past the 1024 limit
    q, k, v = (testing.randn([1030, 1, 16], dtype=torch.float16, device=device, generator=gen) for _ in "qkv")
    jagattn.hstu_attention(q, k, v, cu, 700, alpha=0.25, backend="triton")
    assert torch.float16 in seen


# Seeds of the fuzz whose batches of one-token sequences fail the rule on the fp16 kernels under the
# interpreter, the fp32 reference passing (checked below with the route off: the test can fail), and pass
# on the fp32 route. (With exact fp64 output gradients, hstu seeds 12 and 57 failed too; with the
# gradients rounded for the gold as well they pass with the route off: that was the harness.)
ONE_TOKEN_FAILURES = [("attention", 23), ("attention", 153)]


@pytest.mark.parametrize("op, seed", ONE_TOKEN_FAILURES, ids=[f"{o}-{s}" for o, s in ONE_TOKEN_FAILURES])
def test_route_passes_one_token_batches_the_half_kernels_fail(fuzz, op, seed, route, monkeypatch, device):
    if device != "cpu":
        pytest.skip("the seeds were found under the interpreter; the GPU draws other head dims")
    monkeypatch.setattr(fuzz, "CAP_LEN", 1)
    monkeypatch.setattr(fuzz, "DTYPE", torch.float16)
    route("off")
    msg = fuzz.run_case(op, seed, "cpu", 1)
    assert msg is not None and "exceeds 2.0x" in msg and "[the fp32 reference passes]" in msg, msg
    route("auto")
    assert fuzz.run_case(op, seed, "cpu", 1) is None


# On the GPU the route runs fp32 kernels at every head dim, up to 256 (fp32 rows of 1 KiB: the attention
# backward and the HSTU kernels needed their own small tiles there, session 15)
GPU_DIMS = [(16, 16), (64, 32), (128, 128), (256, 256), (256, 64), (40, 96)]


@pytest.mark.gpu
@pytest.mark.parametrize("dims", GPU_DIMS, ids=[f"{a}x{b}" for a, b in GPU_DIMS])
@pytest.mark.parametrize("op", OPS)
def test_gpu_route_every_head_dim(fuzz, op, dims, route, monkeypatch):
    route("auto")
    monkeypatch.setattr(fuzz, "CAP_LEN", 3)
    monkeypatch.setattr(fuzz, "DIMS", dims)
    seen = _op_input_dtypes(monkeypatch)
    for seed in range(2):
        monkeypatch.setattr(fuzz, "DTYPE", (torch.bfloat16, torch.float16)[seed % 2])
        assert fuzz.run_case(op, seed, "cuda", 1) is None
    assert seen and not (seen & {torch.float16, torch.bfloat16}), seen
