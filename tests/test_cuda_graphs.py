"""Inference calls captured in a CUDA graph (``torch.cuda.graph``), as serving stacks capture decoding steps.

GPU only (``gpu`` marker; capture needs a device). Each case warms the call up on a side stream (compile, autotune,
the launch replay's recording), captures one call, writes new values into the captured inputs, replays the graph
and compares the captured output with an eager call on the new values: bitwise, since both run the same kernels.
With launch replay on (the default) the captured launches are the replayed ones; with it off, Triton's own. Needs
``max_seqlen`` passed (computing it is a host sync, which capture forbids) and ``JAGATTN_CHECK_INPUTS`` unset (its
value checks read GPU tensors on the host).

Written in session 44; first run on the device in session 45 (H200, torch 2.11, Triton 3.6): all pass (the gated
delta cases once their uniform randoms were drawn on the CPU).
"""

from __future__ import annotations

import pytest
import torch

import jagattn
from jagattn.testing import cu_seqlens, generator, rand, randn

pytestmark = pytest.mark.gpu


def _captured_equals_eager(monkeypatch, replay: str, make_inputs, call) -> None:
    """Capture ``call(*inputs)`` once, replay it on new values copied into the captured inputs, compare with an eager
    call on those values."""
    monkeypatch.setenv("JAGATTN_LAUNCH_REPLAY", replay)
    static = make_inputs(1)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.no_grad(), torch.cuda.stream(side):
        for _ in range(3):
            call(*static)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.no_grad(), torch.cuda.graph(graph):
        out = call(*static)
    outs = out if isinstance(out, tuple) else (out,)
    fresh = make_inputs(2)
    for s, f in zip(static, fresh, strict=True):
        if isinstance(s, torch.Tensor) and s.is_floating_point():
            s.copy_(f)
    graph.replay()
    torch.cuda.synchronize()
    with torch.no_grad():
        want = call(*fresh)
    wants = want if isinstance(want, tuple) else (want,)
    for i, (got, w) in enumerate(zip(outs, wants, strict=True)):
        if w is None:
            assert got is None
            continue
        assert torch.isfinite(w.float()).all()
        assert torch.equal(got, w), i


@pytest.mark.parametrize("replay", ["0", "1"])
@pytest.mark.parametrize("hkv, window", [(4, -1), (2, 64)])
def test_gpu_attention_forward_in_a_cuda_graph(monkeypatch, replay, hkv, window):
    lens = [300, 1, 0, 777, 64]
    cu = cu_seqlens(lens, "cuda")
    t = sum(lens)

    def make(seed):
        g = generator(seed)
        return tuple(
            randn((t, h, 128), generator=g, dtype=torch.bfloat16, device="cuda") for h in (8, hkv, hkv)
        )

    def call(q, k, v):
        return jagattn.attention(
            q, k, v, cu, cu, max(lens), max(lens), causal=True, window=(window, 0), backend="triton"
        )

    _captured_equals_eager(monkeypatch, replay, make, call)


@pytest.mark.parametrize("replay", ["0", "1"])
def test_gpu_hstu_forward_and_cached_in_a_cuda_graph(monkeypatch, replay):
    lens = [700, 1, 0, 513, 64]
    cu = cu_seqlens(lens, "cuda")
    t, delta = sum(lens), 4
    nt = torch.tensor([3, 0, 0, 5, 1], device="cuda")
    kw = dict(alpha=1.0 / 128, num_targets=nt, contextual_seq_len=2, max_attn_len=128, backend="triton")

    def make(seed):
        g = generator(seed)
        return tuple(randn((t, 4, 128), generator=g, dtype=torch.bfloat16, device="cuda") for _ in range(3))

    def full(q, k, v):
        return jagattn.hstu_attention(q, k, v, cu, max(lens), **kw)

    _captured_equals_eager(monkeypatch, replay, make, full)

    # the cached forward: the last Δ = 4 rows of every sequence (each has at least Δ tokens)
    lens_c = [300, 5, 129, 64]
    cu_c = cu_seqlens(lens_c, "cuda")
    t_c = sum(lens_c)
    rows = torch.cat([torch.arange(e - delta, e) for e in cu_c[1:].tolist()]).cuda()
    nt_c = torch.tensor([2, 0, 4, 1], device="cuda")
    kw_c = dict(alpha=1.0 / 128, num_targets=nt_c, max_attn_len=50, contextual_seq_len=2, backend="triton")

    def make_c(seed):
        g = generator(seed)
        k = randn((t_c, 4, 128), generator=g, dtype=torch.bfloat16, device="cuda")
        v = randn((t_c, 4, 128), generator=g, dtype=torch.bfloat16, device="cuda")
        q = randn((t_c, 4, 128), generator=g, dtype=torch.bfloat16, device="cuda")[rows].contiguous()
        return q, k, v

    def cached(dq, k, v):
        return jagattn.hstu_attention_cached(dq, k, v, cu_c, max(lens_c), **kw_c)

    _captured_equals_eager(monkeypatch, replay, make_c, cached)


def _gated_delta_step(lens):
    """``(make(seed) -> inputs, call(*inputs) -> (o, final_state))`` of a gated delta batch of ``lens`` (H 4, HV 8,
    K = V = 128, bf16, l2norm, an initial state)."""
    cu = cu_seqlens(lens, "cuda")
    t, n, h, hv, d = sum(lens), len(lens), 4, 8, 128

    def make(seed):
        g = generator(seed)
        q = randn((t, h, d), generator=g, dtype=torch.bfloat16, device="cuda")
        k = randn((t, h, d), generator=g, dtype=torch.bfloat16, device="cuda")
        v = randn((t, hv, d), generator=g, dtype=torch.bfloat16, device="cuda")
        gate = -rand((t, hv), generator=g, device="cuda")
        beta = rand((t, hv), generator=g, dtype=torch.bfloat16, device="cuda")
        h0 = randn((n, hv, d, d), generator=g, dtype=torch.float32, device="cuda") * 0.1
        return q, k, v, gate, beta, h0

    def call(q, k, v, gate, beta, h0):
        return jagattn.gated_delta_rule(
            q, k, v, gate, beta, cu_seqlens=cu, initial_state=h0, output_final_state=True, use_qk_l2norm=True,
            backend="triton",
        )  # fmt: skip

    return make, call


@pytest.mark.parametrize("replay", ["0", "1"])
@pytest.mark.parametrize("lens", [[1] * 64, [40, 0, 300, 7, 129]], ids=["decode", "chunked"])
def test_gpu_gated_delta_forward_in_a_cuda_graph(monkeypatch, replay, lens):
    # one-token sequences take the token loop (the decoding path), the longer batch the chunked kernels
    _captured_equals_eager(monkeypatch, replay, *_gated_delta_step(lens))


def test_gpu_decode_step_under_compile_reduce_overhead():
    # torch.compile's CUDA-graph mode on a gated delta decoding step (launch replay is off under tracing; the graph
    # holds the compiled call's kernels): three steps with new values, each close to the eager call
    torch._dynamo.reset()
    make, step = _gated_delta_step([1] * 32)
    compiled = torch.compile(step, fullgraph=True, mode="reduce-overhead")
    for seed in range(3):
        inputs = make(seed)
        with torch.no_grad():
            got = [x.clone() for x in compiled(*inputs)]  # the graph's outputs are reused
            want = step(*inputs)
        for name, x, w in zip(("o", "final_state"), got, want, strict=True):
            # inductor may fuse the elementwise work around the op (the fp32 route's casts) differently: close, not
            # bitwise (torch's default tolerances of the dtype)
            torch.testing.assert_close(x, w, msg=f"{name}, step {seed}")
