"""``_core.replay``: a replayed op call launches exactly what its recorded call launched, with this call's tensors.

CPU: replay never applies (no key on a CPU / the interpreter); the recorder's bookkeeping with a stand-in compiled
kernel (tensors by position, descriptors rebuilt over the new tensor at the same offset, a foreign tensor spoils the
recording, ``call`` allocates the body's tensors again and returns the same slots). GPU (HSTU, attention and the gated
delta token loop, the ops that use it): forward and backward with replay bitwise equal to the normal path on new
tensors, misaligned copies, the contextual-split path, the cached forward, GQA / windows / the lse gradient, decoding
batches, and the plans are actually taken."""

from __future__ import annotations

import random

import pytest
import torch

import jagattn
from jagattn._core import launch as L
from jagattn._core import replay
from jagattn.testing import cu_seqlens, generator, rand, randn


class _FakePlan:
    def __init__(self, names, calls, scratch=0):
        self.names, self.tail, self.function, self.packed = names, (), "fn", "meta"
        self.calls = calls
        self.kernel = type("K", (), {"metadata": type("M", (), {"global_scratch_size": scratch})()})()

    def run(self, g0, g1, g2, stream, function, packed, meta, enter, exit_, *args):
        self.calls.append(((g0, g1, g2), stream, args))


class _FakeJit:
    pre_run_hooks: list = []


class _FakeStream:
    class active:  # noqa: N801 - mirrors triton.runtime.driver.driver.active
        @staticmethod
        def get_current_stream(device):
            return f"stream{device}"


class _Base:  # gluon._RowsBefore's shape: the owning tensor and a shifted address
    def __init__(self, t, off):
        self._t, self._off = t, off

    def data_ptr(self):
        return self._t.data_ptr() + self._off


def _fake_kernel(monkeypatch, calls, scratch=0):
    kernel = object()
    plan = _FakePlan(["x", "n", "y", "d"], calls, scratch)
    monkeypatch.setitem(L._info, id(kernel), (None, _FakeJit(), frozenset()))
    monkeypatch.setattr(L, "_plain", lambda k: _Launcher())
    monkeypatch.setattr(L, "_make_plan", lambda *a: plan)
    monkeypatch.setattr(L, "_driver", _FakeStream)
    return kernel


class _Launcher:
    def __getitem__(self, grid):
        return lambda *a, **k: "compiled"


class _Desc:
    def __init__(self, base, shape, strides):
        self.base, self.shape, self.strides = base, shape, strides
        self.block_shape, self.layout, self.padding = [4, 8], "layout", "zero"


def test_no_key_on_cpu_or_the_interpreter():
    r = replay.Replay("test_cpu")
    x = torch.zeros(4)
    if not torch.cuda.is_available():
        assert r.key((x,), (1,)) is None
        assert not r.run(None, (x,))


def test_recorded_steps_replay_with_the_new_tensors(monkeypatch):
    calls: list = []
    kernel = _fake_kernel(monkeypatch, calls)
    if L._GluonDesc is None:  # pragma: no cover - a Triton without Gluon
        pytest.skip("needs Gluon's TensorDescriptor type")
    monkeypatch.setattr(L, "_GluonDesc", _Desc)
    r = replay.Replay("test_fake")
    a, b = torch.zeros(8), torch.ones(8)
    key = ("k",)
    with r.record(key, (a, b)):
        L.launch(kernel, (3,), a, 5, b, _Desc(_Base(b, -64), [9, 4], [4, 1]))
        L.launch(kernel, lambda meta: (meta["n"], 2), b, 7, a, _Desc(a, [8], [1]))
    assert r.run(key, (a, b)) and len(calls) == 2
    calls.clear()
    a2, b2 = torch.zeros(8), torch.ones(8)
    assert r.run(key, (a2, b2))
    (g1, s1, args1), (g2, s2, args2) = calls
    assert g1 == (3, 1, 1) and g2 == (7, 2, 1) and s1 == s2 == "streamk"
    assert args1[0] is a2 and args1[1] == 5 and args1[2] is b2
    assert args1[3].base.data_ptr() == b2.data_ptr() - 64 and args1[3].shape == [9, 4]
    assert args2[0] is b2 and args2[2] is a2 and args2[3].base is a2 and args2[3].strides == [1]
    assert not r.run(("other",), (a2, b2))


@pytest.mark.parametrize("scratch", [0, 256])
def test_a_replay_installs_the_scratch_allocator_where_a_kernel_needs_it(monkeypatch, scratch):
    # device-side TMA descriptors: Triton's scratch allocator is per thread, and a replay may run in a thread where
    # the normal path (which installs it) never ran
    kernel = _fake_kernel(monkeypatch, [], scratch)
    ready = []
    monkeypatch.setattr(replay, "scratch_allocator_ready", lambda: ready.append(1) or True)
    r = replay.Replay("test_scratch")
    a = torch.zeros(8)
    with r.record(("k",), (a,)):
        L.launch(kernel, (1,), a, 1, a, 2)
    assert r.run(("k",), (a,)) and len(ready) == (1 if scratch else 0)


def test_a_foreign_tensor_spoils_the_recording(monkeypatch):
    kernel = _fake_kernel(monkeypatch, [])
    r = replay.Replay("test_foreign")
    a = torch.zeros(8)
    with r.record(("k",), (a,)):
        L.launch(kernel, (1,), a, 1, torch.zeros(2), 3)  # a scratch tensor the op does not own
    assert not r.run(("k",), (a,))
    with r.record(("k2",), (a,)):
        L.launch(kernel, (1,), a, 1, a[1:], 3)  # a view: another tensor object
    assert not r.run(("k2",), (a,))


def test_nested_recordings_keep_nothing(monkeypatch):
    kernel = _fake_kernel(monkeypatch, [])
    outer, inner = replay.Replay("test_outer"), replay.Replay("test_inner")
    a = torch.zeros(8)
    with outer.record(("o",), (a,)):
        L.launch(kernel, (1,), a, 1, a, 2)
        with inner.record(("i",), (a,)):
            L.launch(kernel, (1,), a, 1, a, 2)
    assert not outer.run(("o",), (a,)) and not inner.run(("i",), (a,))


def test_an_error_inside_the_recording_keeps_nothing(monkeypatch):
    kernel = _fake_kernel(monkeypatch, [])
    r = replay.Replay("test_error")
    a = torch.zeros(8)
    with pytest.raises(RuntimeError), r.record(("k",), (a,)):
        L.launch(kernel, (1,), a, 1, a, 2)
        raise RuntimeError("boom")
    assert not r.run(("k",), (a,))
    assert replay.recording() is None


def test_call_allocates_again_and_returns_the_same_slots(monkeypatch):
    from jagattn._core.alloc import new_empty

    calls: list = []
    kernel = _fake_kernel(monkeypatch, calls)
    r = replay.Replay("test_call")
    monkeypatch.setattr(r, "key", lambda tensors, scalars: ("k",))
    bodies = []

    def body(x):
        bodies.append(x)
        out = new_empty((3, 2), dtype=torch.float16, device="cpu")
        scratch = new_empty((5,), dtype=torch.float32, device="cpu")
        L.launch(kernel, (1,), x, 2, scratch, 0)
        L.launch(kernel, (2,), scratch, 3, out, 0)
        return out, x

    a = torch.zeros(4)
    out, same = r.call((a,), (), lambda: body(a))
    assert (
        bodies == [a] and same is a and len(calls) == 0
    )  # recorded: launched by the body (the fake launcher)
    b = torch.ones(4)
    out2, same2 = r.call((b,), (), lambda: body(b))
    assert bodies == [a] and same2 is b  # replayed: the body did not run
    assert out2.shape == (3, 2) and out2.dtype == torch.float16 and out2.data_ptr() != out.data_ptr()
    (g1, _, args1), (g2, _, args2) = calls
    assert args1[0] is b and args1[2] is args2[0] and args2[2] is out2
    assert args1[2].shape == (5,) and args1[2].dtype == torch.float32


def test_call_keeps_the_normal_path_for_results_it_cannot_allocate(monkeypatch):
    kernel = _fake_kernel(monkeypatch, [])
    r = replay.Replay("test_call_zeros")
    monkeypatch.setattr(r, "key", lambda tensors, scalars: ("k",))
    runs = []

    def body(x):
        runs.append(1)
        L.launch(kernel, (1,), x, 2, x, 0)
        return torch.zeros_like(x)  # not an allocation the replay could repeat

    a = torch.zeros(4)
    for _ in range(3):
        r.call((a,), (), lambda: body(a))
    assert len(runs) == 3


def test_record_keeps_nothing_when_the_body_allocates(monkeypatch):
    from jagattn._core.alloc import new_empty

    kernel = _fake_kernel(monkeypatch, [])
    r = replay.Replay("test_record_alloc")
    a = torch.zeros(4)
    with r.record(("k",), (a,)):
        s = new_empty((2,), dtype=torch.float32, device="cpu")
        L.launch(kernel, (1,), a, 2, s, 0)
    assert not r.run(("k",), (a,))


# ---------------------------------------------------------------------------------------------
# GPU: HSTU through replay


def _batch(lens, *, C=0, W=0, D=128, H=4, seed=0, misalign=False):
    g = generator(seed)
    L_ = sum(lens)

    def t(shape, grad):
        x = randn(shape, generator=g, dtype=torch.bfloat16, device="cuda")
        if misalign:  # the same values at an address 2 bytes past a 16-byte boundary
            buf = torch.empty(x.numel() + 1, dtype=x.dtype, device="cuda")
            x = buf[1:].view(shape).copy_(x)
        return x.requires_grad_(grad)

    q, k, v, do = t((L_, H, D), True), t((L_, H, D), True), t((L_, H, D), True), t((L_, H, D), False)
    rng = random.Random(seed)
    nt = torch.tensor([rng.randint(0, min(5, n)) for n in lens], device="cuda")
    kw = dict(alpha=1.0 / D, num_targets=nt, contextual_seq_len=C, max_attn_len=W)
    return q, k, v, do, cu_seqlens(lens, "cuda"), max(lens), kw


def _fwd_bwd(q, k, v, do, cu, ms, kw):
    o = jagattn.hstu_attention(q, k, v, cu, ms, backend="triton", **kw)
    return (o, *torch.autograd.grad(o, (q, k, v), do))


@pytest.mark.gpu
@pytest.mark.parametrize("gluon_dkdv", ["auto", "1"])
@pytest.mark.parametrize("C, W", [(0, 0), (6, 256), (3, 40)])
def test_gpu_hstu_replay_matches_the_normal_path(monkeypatch, C, W, gluon_dkdv):
    # "1": the Gluon dK/dV kernel at this size too (host-side descriptors over the 3-D "to the end" view: a
    # descriptor base at an offset from its tensor); "auto" runs the Triton dK/dV kernel on this small batch
    from jagattn.hstu import ops
    from jagattn.hstu.triton import bwd_gluon

    monkeypatch.setattr(bwd_gluon, "GLUON_SWITCH", gluon_dkdv)

    lens = [700, 1, 0, 513, 64, 900]
    hits = {}
    for r in (ops._FWD_REPLAY, ops._BWD_REPLAY):
        real = r.run
        hits[r.name] = []
        monkeypatch.setattr(
            r, "run", lambda key, t, real=real, n=r.name: hits[n].append(real(key, t)) or hits[n][-1]
        )
    batches = [_batch(lens, C=C, W=W, seed=seed, misalign=m) for seed, m in ((1, 0), (2, 0), (3, 1), (4, 1))]
    # the same values at new addresses; clone() realigns the misaligned copies, so a clone may take other kernels
    # than its batch (a misaligned batch cannot use the Gluon dK/dV kernel's TMA, and the Triton dK/dV kernel splits
    # out the contextual rows' dQ: another rounding), hence each call's own normal-path result
    clones = [
        [x.detach().clone().requires_grad_(x.requires_grad) for x in b[:4]] + list(b[4:]) for b in batches
    ]
    # (every patch forgets the plans: conftest's monkeypatch)
    monkeypatch.setenv("JAGATTN_LAUNCH_REPLAY", "0")
    wants = [(_fwd_bwd(*b), _fwd_bwd(*c)) for b, c in zip(batches, clones, strict=True)]
    monkeypatch.setenv("JAGATTN_LAUNCH_REPLAY", "1")
    for seed, (batch, clone, (want, want_clone)) in enumerate(zip(batches, clones, wants, strict=True)):
        first = _fwd_bwd(*batch)  # recorded on the first call of each (alignment) key
        again = _fwd_bwd(*clone)  # new addresses
        for name, w, f, wc, a in zip(("o", "dq", "dk", "dv"), want, first, want_clone, again, strict=True):
            assert torch.equal(w, f), (name, seed)
            assert torch.equal(wc, a), (name, seed)
    # 8 calls per op with replay on: the first aligned and the first misaligned one record, the other 6 replay (clone()
    # realigns the misaligned copies)
    assert (
        hits["hstu_fwd"][-8:] == hits["hstu_bwd"][-8:] == [False, True, True, True, False, True, True, True]
    ), hits


@pytest.mark.gpu
def test_gpu_hstu_cached_replay_matches_the_normal_path(monkeypatch):
    lens = [300, 5, 129, 64]
    delta = 5
    q, k, v, _, cu, ms, kw = _batch(lens, C=2, W=50, seed=7)
    rows = torch.cat([torch.arange(e - delta, e) for e in cu[1:].tolist()]).cuda()
    dq_ = q.detach()[rows].contiguous()
    with torch.no_grad():
        monkeypatch.setenv("JAGATTN_LAUNCH_REPLAY", "0")
        want = jagattn.hstu_attention_cached(dq_, k, v, cu, ms, backend="triton", **kw)
        monkeypatch.setenv("JAGATTN_LAUNCH_REPLAY", "1")
        for _ in range(3):
            got = jagattn.hstu_attention_cached(dq_.clone(), k.detach().clone(), v.detach().clone(), cu, ms,
                                                backend="triton", **kw)  # fmt: skip
            assert torch.equal(got, want)


# ---------------------------------------------------------------------------------------------
# Replay.call ops on the GPU: the same batches with replay off, then on


def _spy_calls(monkeypatch, r) -> list[bool]:
    """Whether each ``r.call`` found a plan (True: replayed), in call order."""
    hits: list[bool] = []

    class _Spy(dict):
        def get(self, key, default=None):
            got = dict.get(self, key, default)
            hits.append(got is not None)
            return got

    monkeypatch.setattr(r, "_calls", _Spy())
    return hits


def _off_then_on(monkeypatch, run, batches, names) -> None:
    """``run(*batch)`` for every batch with replay off, then on (the first call records, the others replay): the
    outputs bitwise equal."""
    monkeypatch.setenv("JAGATTN_LAUNCH_REPLAY", "0")
    wants = [run(*b) for b in batches]
    monkeypatch.setenv("JAGATTN_LAUNCH_REPLAY", "1")
    for seed, (b, want) in enumerate(zip(batches, wants, strict=True)):
        got = run(*b)
        for name, w, x in zip(names, want, got, strict=True):
            assert torch.equal(w, x), (name, seed)


# ---------------------------------------------------------------------------------------------
# GPU: attention through replay (Replay.call: outputs and scratch allocated inside the op)


@pytest.mark.gpu
@pytest.mark.parametrize(
    "hkv, causal, window, lse_grad", [(16, True, -1, False), (4, True, 128, False), (2, False, -1, True)]
)
def test_gpu_attention_replay_matches_the_normal_path(monkeypatch, hkv, causal, window, lse_grad):
    from jagattn.attention import ops

    lens = [300, 1, 0, 777, 64]
    cu = cu_seqlens(lens, "cuda")
    hits = {r.name: _spy_calls(monkeypatch, r) for r in (ops._FWD_REPLAY, ops._BWD_REPLAY)}

    def batch(seed):
        g = generator(seed)
        t = sum(lens)
        q = randn((t, 16, 128), generator=g, dtype=torch.bfloat16, device="cuda", requires_grad=True)
        k = randn((t, hkv, 128), generator=g, dtype=torch.bfloat16, device="cuda", requires_grad=True)
        v = randn((t, hkv, 128), generator=g, dtype=torch.bfloat16, device="cuda", requires_grad=True)
        do = randn((t, 16, 128), generator=g, dtype=torch.bfloat16, device="cuda")
        return q, k, v, do

    def run(q, k, v, do):
        kw = dict(causal=causal, window=(window, 0 if causal else -1), backend="triton")
        if lse_grad:
            o, lse = jagattn.attention(q, k, v, cu, cu, max(lens), max(lens), return_lse=True, **kw)
            loss = (o.float() * do.float()).sum() + lse.float().square().sum() * 1e-3
        else:
            o = jagattn.attention(q, k, v, cu, cu, max(lens), max(lens), **kw)
            loss = (o.float() * do.float()).sum()
        return (o, *torch.autograd.grad(loss, (q, k, v)))

    _off_then_on(monkeypatch, run, [batch(s) for s in (1, 2, 3)], ("o", "dq", "dk", "dv"))
    assert hits["attention_fwd"][-3:] == [False, True, True], hits
    assert hits["attention_bwd"][-3:] == [False, True, True], hits


@pytest.mark.gpu
def test_gpu_attention_replay_in_a_thread_without_the_scratch_allocator(monkeypatch):
    # the forward loads K / V through device-side TMA descriptors, which need Triton's per-thread scratch allocator:
    # a plan recorded in this thread and replayed in a new one (which starts without an allocator) installs it there
    import threading

    from jagattn.attention import ops

    monkeypatch.setenv("JAGATTN_LAUNCH_REPLAY", "1")
    lens = [2048, 5, 1000]
    cu = cu_seqlens(lens, "cuda")
    g = generator(5)
    t = sum(lens)
    q = randn((t, 8, 128), generator=g, dtype=torch.bfloat16, device="cuda")
    k = randn((t, 2, 128), generator=g, dtype=torch.bfloat16, device="cuda")
    v = randn((t, 2, 128), generator=g, dtype=torch.bfloat16, device="cuda")

    def run():
        with torch.no_grad():
            return jagattn.attention(q, k, v, cu, cu, max(lens), max(lens), causal=True, backend="triton")

    want = run()  # recorded here
    assert ops._FWD_REPLAY._calls, "the call was not recorded"
    got, errors = {}, []

    def work():
        try:
            got["o"] = run()
            torch.cuda.synchronize()
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    worker = threading.Thread(target=work)
    worker.start()
    worker.join(timeout=120)
    assert not errors, errors
    assert torch.equal(got["o"], want)


# ---------------------------------------------------------------------------------------------
# GPU: the gated delta token loop (the decoding path) through replay


@pytest.mark.gpu
@pytest.mark.parametrize(
    "with_gk, l2norm, state", [(False, True, True), (True, False, True), (False, False, False)]
)
def test_gpu_gated_delta_recurrent_replay_matches_the_normal_path(monkeypatch, with_gk, l2norm, state):
    from jagattn.gated_delta import ops

    hits = _spy_calls(monkeypatch, ops._REC_REPLAY)
    lens = [1] * 48 + [3, 0, 7]  # decoding steps, a few short prompts, an empty sequence
    cu = cu_seqlens(lens, "cuda")
    t, n, h, hv, kd, vd = sum(lens), len(lens), 4, 8, 128, 128

    def batch(seed):
        g_ = generator(seed)
        q = randn((t, h, kd), generator=g_, dtype=torch.bfloat16, device="cuda")
        k = randn((t, h, kd), generator=g_, dtype=torch.bfloat16, device="cuda")
        if not l2norm:
            q, k = q * kd**-0.5, torch.nn.functional.normalize(k.float(), dim=-1).to(torch.bfloat16)
        v = randn((t, hv, vd), generator=g_, dtype=torch.bfloat16, device="cuda")
        g = -rand((t, hv), generator=g_, device="cuda")
        beta = rand((t, hv), generator=g_, dtype=torch.bfloat16, device="cuda")
        gk = -rand((t, hv, kd), generator=g_, device="cuda") * 0.1 if with_gk else None
        h0 = randn((n, hv, kd, vd), generator=g_, dtype=torch.float32, device="cuda") if state else None
        return q, k, v, g, beta, gk, h0

    def run(q, k, v, g, beta, gk, h0):
        return jagattn.gated_delta_rule(
            q, k, v, g, beta, cu_seqlens=cu, initial_state=h0, output_final_state=True, use_qk_l2norm=l2norm, gk=gk,
            backend="triton",
        )  # fmt: skip

    _off_then_on(monkeypatch, run, [batch(s) for s in (1, 2, 3)], ("o", "final_state"))
    assert hits[-3:] == [False, True, True], hits  # the first call records, the next two replay


def test_the_key_separates_one_tensor_in_two_places_from_two_tensors(monkeypatch):
    # attention's cu_seqlens_q is often cu_seqlens_k itself: a plan recorded that way finds both by the first one, so
    # a call with two different (equal-shaped) tensors must get another key, and the other way round
    class _Dev:
        class active:  # noqa: N801 - mirrors triton.runtime.driver.driver.active
            @staticmethod
            def get_current_device():
                return 0

    monkeypatch.setattr(replay, "_available", lambda: True)
    monkeypatch.setattr(replay, "interpreter_enabled", lambda: False)
    monkeypatch.setattr(L, "_driver", _Dev)
    if not hasattr(L, "_RUNTIME"):  # pragma: no cover - a Triton without the launch hooks: no replay at all
        pytest.skip("no Triton launch hooks to inspect")
    r = replay.Replay("test_alias")
    a, b, c = torch.zeros(4), torch.zeros(4), torch.zeros(4)
    shared = r.key((a, b, b), ())
    apart = r.key((a, b, c), ())
    assert shared is not None and apart is not None
    assert shared != apart
    assert r.key((a, c, c), ()) == shared and r.key((c, a, b), ()) == apart
    assert r.key((a, a, b), ()) != shared


def test_a_bad_switch_value_raises_naming_it(monkeypatch):
    monkeypatch.setenv("JAGATTN_LAUNCH_REPLAY", "yes")
    r = replay.Replay("test_switch")
    with pytest.raises(ValueError, match="JAGATTN_LAUNCH_REPLAY"):
        r.key((torch.zeros(2),), ())
