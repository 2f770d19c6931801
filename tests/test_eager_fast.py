"""The eager fast path (``jagattn._core.library.eager_call``): the op's body called directly in plain
eager mode, the registered op everywhere else. Same results bit for bit, the same gradients, and the
dispatcher (fake impls, modes) wherever the fast path must not run."""

from __future__ import annotations

import pytest
import torch
from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode
from torch.overrides import TorchFunctionMode

import jagattn
from jagattn import testing
from jagattn._core import library

F16 = torch.float16


@pytest.fixture
def fast(monkeypatch):
    def set_fast(on: bool) -> None:
        monkeypatch.setattr(library, "EAGER_FAST", on)

    return set_fast


def _attention_case(gen, device):
    lengths = [37, 0, 64, 1, 70]
    cu = testing.cu_seqlens(lengths, device=device)
    q = testing.randn([sum(lengths), 4, 32], generator=gen, dtype=F16, device=device)
    k, v = (testing.randn([sum(lengths), 2, 32], generator=gen, dtype=F16, device=device) for _ in range(2))

    def call(q, k, v):
        return jagattn.attention(
            q, k, v, cu, cu, max_seqlen_q=70, max_seqlen_k=70, causal=True, backend="triton"
        )

    return (q, k, v), call


def _hstu_case(gen, device):
    lengths = [37, 0, 64, 1, 70]
    cu = testing.cu_seqlens(lengths, device=device)
    q, k, v = (
        testing.randn([sum(lengths), 2, 32], generator=gen, dtype=F16, device=device) for _ in range(3)
    )
    nt = torch.tensor([3, 0, 5, 1, 2], device=device)

    def call(q, k, v):
        return jagattn.hstu_attention(
            q, k, v, cu, max_seq_len=70, alpha=0.25, num_targets=nt, contextual_seq_len=2, backend="triton"
        )

    return (q, k, v), call


def _gated_delta_case(gen, device, per_key=False):
    # (per-key gates: fewer chunks and one value head, the gk kernels are the interpreter's slowest and cost per
    # chunk and head; still two sequences, an empty one and a partial second chunk. GVA with gk runs through
    # the fast path, the default, in test_gated_delta_gk.py::test_public_api_gk_with_gradients_runs_chunked_triton)
    lengths = [21, 0, 70] if per_key else [37, 0, 70, 21]
    hv = 1 if per_key else 2
    t = sum(lengths)
    cu = testing.cu_seqlens(lengths, device=device)
    q, k = (testing.randn([t, 1, 16], generator=gen, dtype=F16, device=device) for _ in range(2))
    v = testing.randn([t, hv, 16], generator=gen, dtype=F16, device=device)
    g = torch.nn.functional.logsigmoid(testing.randn([t, hv], generator=gen, device=device))
    beta = torch.sigmoid(testing.randn([t, hv], generator=gen, device=device))
    h0 = testing.randn([len(lengths), hv, 16, 16], generator=gen, device=device)
    extra = {}
    if per_key:
        extra["gk"] = torch.nn.functional.logsigmoid(testing.randn([t, hv, 16], generator=gen, device=device))

    def call(q, k, v, g, beta, h0, *gk):
        kw = dict(extra, gk=gk[0]) if gk else {}
        o, fs = jagattn.gated_delta_rule(
            q, k, v, g, beta, cu_seqlens=cu, initial_state=h0, output_final_state=True,
            use_qk_l2norm=True, backend="triton", **kw,
        )  # fmt: skip
        return o, fs

    leaves = (q, k, v, g, beta, h0) + ((extra["gk"],) if per_key else ())
    return leaves, call


CASES = {
    "attention": _attention_case,
    "hstu": _hstu_case,
    "gated_delta": _gated_delta_case,
    "gated_delta_gk": lambda gen, device: _gated_delta_case(gen, device, per_key=True),
}


def _outputs(out) -> tuple[torch.Tensor, ...]:
    return tuple(out) if isinstance(out, tuple) else (out,)


def _run(leaves, call, with_grad: bool):
    leaves = [x.detach().clone().requires_grad_(with_grad) for x in leaves]
    outs = _outputs(call(*leaves))
    if not with_grad:
        return outs, (), None
    gen = testing.generator(99)
    weights = [torch.randn(o.shape, generator=gen, dtype=torch.float32).to(o) for o in outs]
    loss = sum((o.float() * w.float()).sum() for o, w in zip(outs, weights, strict=True))
    grads = torch.autograd.grad(loss, leaves)
    return outs, grads, type(outs[0].grad_fn).__name__


@pytest.mark.parametrize("with_grad", [False, True], ids=["no-grad", "grad"])
@pytest.mark.parametrize("name", list(CASES))
def test_fast_path_is_bitwise_the_dispatcher(name, with_grad, fast, device):
    leaves, call = CASES[name](testing.generator(7), device)
    fast(False)
    ref_out, ref_grads, ref_fn = _run(leaves, call, with_grad)
    fast(True)
    out, grads, fn = _run(leaves, call, with_grad)
    for a, b in zip(out + grads, ref_out + ref_grads, strict=True):
        assert torch.equal(a, b)
    if with_grad:
        # the fast path really ran (its autograd.Function), and the dispatcher's autograd before it
        assert fn.endswith("_eagerBackward"), fn
        assert "_eager" not in ref_fn, ref_fn


def test_fast_path_leaves_fake_tensors_to_the_fake_impl(fast, device):
    # FakeTensorMode (what export and compile trace with): the registered op's fake impl answers, the
    # body (which would launch kernels) never runs
    from jagattn.hstu import ops

    fast(True)
    gen = testing.generator(3)
    q, k, v = (testing.randn([40, 2, 16], generator=gen, dtype=F16, device=device) for _ in range(3))
    cu = testing.cu_seqlens([15, 25], device=device)
    with FakeTensorMode() as mode:
        args = [mode.from_tensor(x) for x in (q, k, v, cu)]
        out = library.eager_call(ops.hstu_fwd, *args, None, 25, 0.25, 1 / 25, 0, 0, 0, True)
    assert isinstance(out, FakeTensor) and tuple(out.shape) == (40, 2, 16)


def test_fast_path_steps_aside_for_modes_and_subclasses(fast, device):
    fast(True)
    leaves, call = _hstu_case(testing.generator(5), device)

    class Passthrough(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            return func(*args, **(kwargs or {}))

    with Passthrough():
        _, _, fn = _run(leaves, call, True)
    assert "_eager" not in fn, fn
    _, _, fn = _run(leaves, call, True)
    assert fn.endswith("_eagerBackward"), fn

    class Sub(torch.Tensor):
        pass

    assert library._plain_eager((torch.ones(1), None, 3))
    assert not library._plain_eager((torch.ones(1).as_subclass(Sub),))


def test_unregistered_callable_is_just_called():
    # a test's spy (or any plain function) in place of an op: called as it is
    seen = []
    assert library.eager_call(lambda *a: seen.append(a) or 5, 1, None) == 5
    assert seen == [(1, None)]


@pytest.mark.parametrize("name", ["attention", "hstu", "gated_delta"])
def test_compiled_call_keeps_the_registered_op(name, fast, device):
    # under dynamo (fullgraph, no graph break) eager_call must hand over to the registered op, whose
    # autograd formula then backs the compiled graph; results equal the eager fast path's. The "eager"
    # backend: Inductor and AOT tracing need real GPU kernels (covered by the gpu compile tests).
    # (attention failed here on the CPU before its explicit fake impls: triton_op traced the body)
    fast(True)
    torch._dynamo.reset()
    leaves, call = CASES[name](testing.generator(11), device)
    out, grads, fn = _run(leaves, call, True)
    compiled = torch.compile(call, fullgraph=True, backend="eager")
    c_out, c_grads, c_fn = _run(leaves, compiled, True)
    assert fn.endswith("_eagerBackward") and "_eager" not in c_fn, (fn, c_fn)
    for a, b in zip(c_out + c_grads, out + grads, strict=True):
        assert torch.equal(a, b)


def test_device_guard_decision(monkeypatch):
    # which calls get a device guard: only a plain CUDA tensor on another device of a multi-GPU machine
    # (decided from the first tensor argument; the public APIs check every tensor shares its device)
    assert library._other_cuda_device((3, torch.ones(1), None)) is None  # CPU tensor
    assert library._other_cuda_device((3, None)) is None  # no tensor
    meta = torch.ones(1, device="meta")
    assert library._other_cuda_device((meta,)) is None


@pytest.mark.gpu
@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two CUDA GPUs (kind nvidia-h200-x2)")
@pytest.mark.parametrize("fast_on", [True, False], ids=["fast", "dispatcher"])
@pytest.mark.parametrize("name", list(CASES))
def test_gpu_inputs_on_a_non_current_device(name, fast_on, fast):
    # inputs on cuda:1 while cuda:0 is current: the kernels must run on cuda:1 (Triton launches on the
    # current device), forward and backward, equal to the same call made with cuda:1 current
    fast(fast_on)
    leaves, call = CASES[name](testing.generator(21), "cuda:1")
    with torch.cuda.device(1):
        ref_out, ref_grads, _ = _run(leaves, call, True)
    torch.cuda.set_device(0)
    out, grads, _ = _run(leaves, call, True)
    torch.cuda.synchronize(1)
    for a, b in zip(out + grads, ref_out + ref_grads, strict=True):
        assert a.device == torch.device("cuda:1")
        assert torch.equal(a, b)
