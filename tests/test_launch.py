"""``_core.launch.launch``: the eager fast launch must run exactly what ``kernel[grid](...)`` runs.

The fast path is opt-in (``JAGATTN_FAST_LAUNCH=1``). CPU (interpreter): the fast path is off and ``launch`` is a plain launch; the fingerprint separates every argument
property Triton specializes on. GPU: the fast path's results equal the plain launch's for aligned and misaligned
tensors, ints equal to 1 / multiples of 16 / others, an autotuned kernel with a callable grid, and it caches one
plan per fingerprint. The plain launch's direct call (``DIRECT``, ``JAGATTN_DIRECT_LAUNCH``): ``kernel[grid]`` itself
inside triton_op bodies in eager mode, bitwise the wrapped launch."""

from __future__ import annotations

import pytest
import torch
import triton
import triton.language as tl

from jagattn._core import launch as L

CUDA = torch.cuda.is_available()
DEV = "cuda" if CUDA else "cpu"


@triton.jit
def _axpy_kernel(X, Y, OUT, n, stride, a, b, BLOCK: tl.constexpr, SHIFT: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < n
    x = tl.load(X + i * stride, mask=m, other=0.0).to(tl.float32)
    y = tl.load(Y + i * stride, mask=m, other=0.0).to(tl.float32)
    a = tl.cast(a, tl.float32)
    tl.store(OUT + i, (a * x + y + b + SHIFT).to(OUT.dtype.element_ty), mask=m)


_axpy_tuned = triton.autotune(
    configs=[triton.Config({"BLOCK": 32}, num_warps=1), triton.Config({"BLOCK": 128}, num_warps=4)], key=["n"]
)(_axpy_kernel)


def _expected(x, y, n, stride, a, b, shift):
    return (a * x[: n * stride : stride].float() + y[: n * stride : stride].float() + b + shift).to(x.dtype)


def _run(kernel, x, y, n, stride, a, b, shift, block=None, plain=False):
    """``L.launch`` (or, ``plain``, Triton's own ``kernel[grid]``) into a NaN-filled output."""
    out = torch.full((n,), float("nan"), dtype=x.dtype, device=x.device)
    go = (lambda k, g, *a, **kw: k[g](*a, **kw)) if plain else L.launch
    if block is None:
        go(kernel, lambda meta: (triton.cdiv(n, meta["BLOCK"]),), x, y, out, n, stride, a, b, SHIFT=shift)
    else:
        go(kernel, (triton.cdiv(n, block),), x, y, out, n, stride, a, b, BLOCK=block, SHIFT=shift)
    return out


def _check(kernel, x, y, n, stride, a, b, shift, block=None):
    """The fast launch's output is bitwise Triton's own launch's, and both are the formula's (FMA rounding aside)."""
    got = _run(kernel, x, y, n, stride, a, b, shift, block)
    want = _run(kernel, x, y, n, stride, a, b, shift, block, plain=True)
    torch.testing.assert_close(got, want, rtol=0, atol=0)
    torch.testing.assert_close(got, _expected(x, y, n, stride, a, b, shift))


def test_fingerprint_separates_what_triton_specializes():
    base = torch.zeros(64, device=DEV)
    fp = lambda *args, exact=frozenset(): L._fingerprint(args, exact, {})  # noqa: E731
    # alignment of the data pointer (16 bytes) and the dtype
    assert fp(base[0:]) != fp(base[1:])
    assert fp(base[0:]) == fp(base[4:])  # 16 bytes further: still aligned
    assert fp(base) != fp(base.half())
    # ints: == 1, multiple of 16, width class; everything else is a run-time value
    assert fp(base, 1) != fp(base, 2)
    assert fp(base, 16) != fp(base, 17)
    assert fp(base, 16) == fp(base, 48)
    assert fp(base, 3) == fp(base, 5)
    assert fp(base, 2**31 - 1) != fp(base, 2**31 + 1)
    assert fp(base, 2**63 - 1) != fp(base, 2**63 + 1)
    # an autotuner key (here the argument at index 1) is exact: it picks the config
    assert fp(base, 3, exact=frozenset({1})) != fp(base, 5, exact=frozenset({1}))
    # floats are run-time values; bools and None are kept
    assert fp(base, 3, 0.5) == fp(base, 3, 2.0)
    assert fp(base, 3, True) != fp(base, 3, False)
    assert fp(base, 3, None) != fp(base, 3, 0.5)
    # something it does not know: no fingerprint (Triton's own path)
    assert fp(base, 3, "x") is None
    assert L._fingerprint((base,), frozenset(), {"BLOCK": 32}) != L._fingerprint(
        (base,), frozenset(), {"BLOCK": 64}
    )


def test_switch_is_validated(monkeypatch):
    monkeypatch.setenv("JAGATTN_FAST_LAUNCH", "yes")
    with pytest.raises(ValueError, match="JAGATTN_FAST_LAUNCH"):
        L.enabled()


def test_direct_switch_is_read_and_validated_at_import():
    # JAGATTN_DIRECT_LAUNCH (launch.DIRECT) is read when the module is imported: "0" turns the direct plain launch
    # off, a bad value stops the import with a ValueError naming the variable
    import os
    import subprocess
    import sys

    code = "from jagattn._core import launch; print(launch.DIRECT)"
    for value, want in (("0", "False"), ("1", "True")):
        env = {**os.environ, "JAGATTN_DIRECT_LAUNCH": value}
        out = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
        )
        assert out.stdout.strip() == want, (value, out.stdout, out.stderr)
    env = {**os.environ, "JAGATTN_DIRECT_LAUNCH": "yes"}
    bad = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert bad.returncode != 0 and "ValueError" in bad.stderr and "JAGATTN_DIRECT_LAUNCH" in bad.stderr, (
        bad.stderr
    )


@pytest.mark.skipif(CUDA, reason="the interpreter's plain path (CPU CI)")
def test_interpreter_takes_the_plain_launch(monkeypatch):
    monkeypatch.setenv("JAGATTN_FAST_LAUNCH", "1")  # asked for, but the interpreter has no compiled kernel
    assert not L.enabled()
    L.clear()
    x = torch.randn(100)
    y = torch.randn(100)
    _check(_axpy_kernel, x, y, 100, 1, 0.5, 2.0, 3, block=32)
    assert not L._plans


@pytest.mark.skipif(CUDA, reason="the interpreter's kernels (CPU CI)")
def test_interpreter_kernel_launches_where_wrap_triton_refuses_it(monkeypatch):
    # torch 2.11's wrap_triton raises for the interpreter's InterpretedFunction (torch 2.13 returns it as it is):
    # session 47 found every gated delta call failing on the CPU with the device's torch 2.11 + Triton 3.6; the
    # plain launch runs the kernel itself then. Other errors of wrap_triton still raise
    real = torch.library.wrap_triton

    def old_torch(kernel):
        if type(kernel).__name__ == "InterpretedFunction":
            raise RuntimeError(
                "wrap_triton only works on functions annotated with triton.jit or triton.autotune"
            )
        return real(kernel)

    monkeypatch.setattr(torch.library, "wrap_triton", old_torch)
    x, y = torch.randn(100), torch.randn(100)
    _check(_axpy_kernel, x, y, 100, 1, 0.5, 2.0, 3, block=32)
    monkeypatch.setattr(torch.library, "wrap_triton", lambda k: (_ for _ in ()).throw(RuntimeError("other")))
    with pytest.raises(RuntimeError, match="other"):
        L._plain(object())


def _count_wrapped(monkeypatch) -> list:
    """The kernels ``launch`` hands to its wrapper path (``_plain``), recorded as they pass."""
    calls: list = []
    real = L._plain

    def spy(kernel):
        calls.append(kernel)
        return real(kernel)

    monkeypatch.setattr(L, "_plain", spy)
    return calls


@pytest.mark.skipif(CUDA, reason="the interpreter's kernels (CPU CI)")
def test_plain_launch_calls_the_kernel_itself_inside_triton_op_bodies(monkeypatch):
    # launch.DIRECT: where torch's wrap_triton switch is off (a triton_op body on plain tensors, eager) the plain launch
    # calls kernel[grid] itself, which is all the wrapper would do there; with the switch on (the default outside such
    # bodies), with DIRECT False and with torch.library.wrap_triton replaced (instrumentation) it goes through the
    # wrapper. Same output bitwise every way
    from torch._library.triton import set_wrap_triton_enabled

    from conftest import wrap_triton_or_kernel

    calls = _count_wrapped(monkeypatch)
    x, y = torch.randn(100), torch.randn(100)
    run = lambda: _run(_axpy_kernel, x, y, 100, 1, 0.5, 2.0, 3, block=32)  # noqa: E731
    with set_wrap_triton_enabled(False):
        direct = run()
    assert calls == []
    outs = [run()]  # the switch on
    assert len(calls) == 1
    real = torch.library.wrap_triton
    seen: list = []
    monkeypatch.setattr(
        torch.library, "wrap_triton", lambda k: seen.append(k) or wrap_triton_or_kernel(real, k)
    )
    with set_wrap_triton_enabled(False):
        outs.append(run())
    assert len(calls) == 2 and len(seen) == 1
    monkeypatch.setattr(torch.library, "wrap_triton", real)
    monkeypatch.setattr(L, "DIRECT", False)
    with set_wrap_triton_enabled(False):
        outs.append(run())
    assert len(calls) == 3
    for out in outs:
        torch.testing.assert_close(direct, out, rtol=0, atol=0)
    torch.testing.assert_close(direct, _expected(x, y, 100, 1, 0.5, 2.0, 3))


@pytest.mark.skipif(CUDA, reason="the interpreter's kernels (CPU CI)")
def test_ops_launch_directly_in_eager_mode(monkeypatch):
    # every launch of an op's eager call runs inside its triton_op body (wrap_triton's switch off there), so none goes
    # through the wrapper with DIRECT on; the output and gradients are bitwise those of the wrapped launches
    import jagattn

    calls = _count_wrapped(monkeypatch)
    monkeypatch.setenv("JAGATTN_LAUNCH_REPLAY", "0")
    gen = torch.Generator().manual_seed(0)
    lens = [5, 0, 17]
    cu = torch.tensor([0, 5, 5, 22], dtype=torch.int32)
    q, k, v = (torch.randn(sum(lens), 2, 16, generator=gen, requires_grad=True) for _ in range(3))

    def run():
        o = jagattn.hstu_attention(q, k, v, cu, max(lens), alpha=0.5, backend="triton")
        grads = torch.autograd.grad(o, (q, k, v), torch.ones_like(o))
        return (o, *grads)

    direct = run()
    assert calls == [], [getattr(c, "__name__", c) for c in calls]
    monkeypatch.setattr(L, "DIRECT", False)
    wrapped = run()
    assert len(calls) >= 2  # forward and backward kernels
    for a, b in zip(direct, wrapped, strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=0)


@pytest.mark.gpu
@pytest.mark.skipif(not CUDA, reason="needs a CUDA GPU (run on the device machine)")
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_gpu_fast_launch_matches_the_plain_launch(dtype, monkeypatch):
    monkeypatch.setenv("JAGATTN_FAST_LAUNCH", "1")
    assert L.enabled()
    L.clear()
    g = torch.Generator(device="cuda").manual_seed(0)
    buf_x = torch.randn(4096, device="cuda", generator=g).to(dtype)
    buf_y = torch.randn(4096, device="cuda", generator=g).to(dtype)
    # the same fingerprint twice (the second call is the fast path), then every property changed once
    for off, n, stride, a, b, shift in [
        (0, 1000, 1, 0.5, 1.0, 0),
        (0, 1000, 1, -2.0, 0.25, 0),  # same fingerprint, other floats
        (0, 3000, 1, 0.5, 1.0, 0),  # same fingerprint, a larger grid (a stale grid would leave NaNs)
        (4, 997, 1, 0.5, 1.0, 0),  # 16 bytes further (fp32) / 8 bytes (bf16: misaligned)
        (1, 1000, 1, 0.5, 1.0, 0),  # misaligned pointer
        (0, 1024, 1, 0.5, 1.0, 0),  # n a multiple of 16
        (0, 1, 1, 0.5, 1.0, 0),  # n == 1
        (0, 1000, 2, 0.5, 1.0, 0),  # strided
        (0, 1000, 1, 0.5, 1.0, 7),  # another constexpr
        (0, 1000, 1, 0.5, 1.0, 0),  # back to the first fingerprint
    ]:
        x, y = buf_x[off:], buf_y[off:]
        for kernel, block in ((_axpy_kernel, 64), (_axpy_tuned, None)):
            _check(kernel, x, y, n, stride, a, b, shift, block)
    # one plan per fingerprint and kernel object, each a compiled launch (not a fallback)
    plans = [p for table in L._plans.values() for p in table.values()]
    assert plans and all(p is not None for p in plans)
    assert len(L._plans[id(_axpy_kernel)]) >= 6


@pytest.mark.gpu
@pytest.mark.skipif(not CUDA, reason="needs a CUDA GPU (run on the device machine)")
def test_gpu_fast_launch_uses_the_autotuned_config_per_key(monkeypatch):
    monkeypatch.setenv("JAGATTN_FAST_LAUNCH", "1")
    L.clear()
    x = torch.randn(5000, device="cuda")
    y = torch.randn(5000, device="cuda")
    for n in (40, 5000, 40, 5000, 333):
        _check(_axpy_tuned, x, y, n, 1, 1.5, 0.0, 0)
    table = L._plans[id(_axpy_tuned)]
    assert len(table) == 3 and all(p is not None for p in table.values())


@pytest.mark.gpu
@pytest.mark.skipif(not CUDA, reason="needs a CUDA GPU (run on the device machine)")
@pytest.mark.parametrize("setting", [None, "0"])
def test_gpu_fast_launch_off_by_default_and_switch(monkeypatch, setting):
    L.clear()
    if setting is None:
        monkeypatch.delenv("JAGATTN_FAST_LAUNCH", raising=False)
    else:
        monkeypatch.setenv("JAGATTN_FAST_LAUNCH", setting)
    x = torch.randn(100, device="cuda")
    _check(_axpy_kernel, x, x, 100, 1, 1.0, 0.0, 0, block=32)
    assert not L._plans
