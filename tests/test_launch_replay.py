"""``_core.replay``: a replayed op call launches exactly what its recorded call launched, with this call's tensors.

CPU: replay never applies (no key on a CPU / the interpreter); the recorder's bookkeeping with a stand-in compiled
kernel (tensors by position, descriptors rebuilt over the new tensor at the same offset, a foreign tensor spoils the
recording). GPU (HSTU, the op that uses it): forward and backward with replay bitwise equal to the normal path on new
tensors, misaligned copies, the contextual-split path and the cached forward, and the plan is actually taken."""

from __future__ import annotations

import random

import pytest
import torch

import jagattn
from jagattn._core import launch as L
from jagattn._core import replay
from jagattn.testing import cu_seqlens, generator, randn


class _FakePlan:
    def __init__(self, names, calls):
        self.names, self.tail, self.function, self.packed = names, (), "fn", "meta"
        self.calls = calls

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


def _fake_kernel(monkeypatch, calls):
    kernel = object()
    plan = _FakePlan(["x", "n", "y", "d"], calls)
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
@pytest.mark.parametrize("C, W", [(0, 0), (6, 256), (3, 40)])
def test_gpu_hstu_replay_matches_the_normal_path(monkeypatch, C, W):
    from jagattn.hstu import ops

    lens = [700, 1, 0, 513, 64, 900]
    hits = {}
    for r in (ops._FWD_REPLAY, ops._BWD_REPLAY):
        real = r.run
        hits[r.name] = []
        monkeypatch.setattr(
            r, "run", lambda key, t, real=real, n=r.name: hits[n].append(real(key, t)) or hits[n][-1]
        )
    batches = [_batch(lens, C=C, W=W, seed=seed, misalign=m) for seed, m in ((1, 0), (2, 0), (3, 1), (4, 1))]
    # (every patch forgets the plans: conftest's monkeypatch)
    monkeypatch.setenv("JAGATTN_LAUNCH_REPLAY", "0")
    wants = [_fwd_bwd(*batch) for batch in batches]
    monkeypatch.setenv("JAGATTN_LAUNCH_REPLAY", "1")
    for seed, (batch, want) in enumerate(zip(batches, wants, strict=True)):
        first = _fwd_bwd(*batch)  # recorded on the first call of each (alignment) key
        clone = [x.detach().clone().requires_grad_(x.requires_grad) for x in batch[:4]]
        again = _fwd_bwd(*clone, *batch[4:])  # new addresses
        for name, w, f, a in zip(("o", "dq", "dk", "dv"), want, first, again, strict=True):
            assert torch.equal(w, f), (name, seed)
            assert torch.equal(w, a), (name, seed)
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
