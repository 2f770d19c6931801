"""Launch contract of every Triton kernel, checked on the CPU (interpreter) for what ``torch.compile``
needs on the GPU.

Inductor re-launches user kernels from the ``wrap_triton`` call it traced, and two launch habits
that are harmless in eager break it there (both seen on the H200, neither visible in a CPU test of
the results):

* a ``tl.constexpr`` left at its default value: Inductor's mutation analysis and codegen want the
  full argument list and fail ("Incorrect number of arguments passed to kernel");
* a Python float passed as a runtime argument: Inductor passes it as an fp64 scalar, which promotes
  the arithmetic it touches to fp64 (compiled results then differ from eager's, or fp64 tiles
  reach ``tl.dot``). Such an argument must be cast to fp32 at the kernel's entry, or be a
  ``tl.constexpr``.

Every public op runs here forward and backward on tiny jagged batches (every variant a default
or an opt-in switch reaches, ``CASES``), with ``torch.library.wrap_triton`` replaced by a checking
wrapper, and the test then asserts that every ``@triton.jit`` kernel of the package was launched at
least once, so a new kernel cannot skip the check."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re

import pytest
import torch
import triton.language as tl
from triton.runtime.autotuner import Autotuner

import jagattn
from jagattn.testing import cu_seqlens, generator, randn

LAUNCH_OPTIONS = {"num_warps", "num_stages", "num_ctas", "maxnreg"}
LAUNCHED: dict[str, int] = {}
F16 = torch.float16


def _fp32_cast_at_entry(src: str, name: str) -> bool:
    return bool(
        re.search(rf"\b{name}\s*=\s*tl\.cast\(\s*{name}\s*,\s*tl\.float32\s*\)", src)
        or re.search(rf"\b{name}\s*=\s*{name}\.to\(\s*tl\.float32\s*\)", src)
    )


def _is_constexpr(annotation) -> bool:
    return annotation is tl.constexpr or "constexpr" in str(annotation)


def _python_fn(kernel):
    """The decorated Python function of a jit kernel (JITFunction on a GPU, InterpretedFunction under
    the interpreter, either inside an Autotuner)."""
    jit = kernel.fn if isinstance(kernel, Autotuner) else kernel
    return jit.fn


def _check_launch(kernel, args, kwargs) -> None:
    py = _python_fn(kernel)
    params = inspect.signature(py).parameters
    names = list(params)
    assert len(args) <= len(names), (
        f"{py.__name__}: {len(args)} positional arguments for {len(names)} parameters"
    )
    given = dict(zip(names, args, strict=False))
    given.update({k: v for k, v in kwargs.items() if k not in LAUNCH_OPTIONS})
    if isinstance(kernel, Autotuner) and kernel.configs:
        given.update(kernel.configs[0].kwargs)
    missing = [n for n in names if n not in given]
    assert not missing, f"{py.__name__}: constexprs left at their defaults (pass them): {missing}"
    src = inspect.getsource(py)
    for name, p in params.items():
        if _is_constexpr(p.annotation) or not isinstance(given[name], float):
            continue
        assert _fp32_cast_at_entry(src, name), (
            f"{py.__name__}: runtime float argument {name!r} is not cast to fp32 at entry "
            f"(Inductor passes it as fp64); add `{name} = tl.cast({name}, tl.float32)` or make it a constexpr"
        )
    LAUNCHED[py.__name__] = LAUNCHED.get(py.__name__, 0) + 1


@pytest.fixture
def checked_launches(on_launch):
    on_launch(_check_launch)


def _leaves(*ts):
    return [t.requires_grad_() for t in ts]


def _backward(out, *leaves):
    outs = out if isinstance(out, tuple) else (out,)
    loss = sum(o.float().sum() for o in outs if o is not None and o.requires_grad)
    loss.backward()
    for t in leaves:
        assert t.grad is not None


LENGTHS = [5, 0, 70, 1]


def _attention_case(monkeypatch, variant):
    if variant == "atomic_dq":
        monkeypatch.setenv("JAGATTN_ATTN_DQ", "atomic")
    if variant == "head_major_off":
        monkeypatch.setenv("JAGATTN_ATTN_HEAD_MAJOR", "0")
    gen = generator(1)
    t = sum(LENGTHS)
    cu = cu_seqlens(LENGTHS)
    q, k, v = _leaves(*(randn((t, h, 16), generator=gen, dtype=F16) for h in (4, 2, 2)))
    kws = ({"causal": True, "window": (8, 0), "softcap": 5.0, "scale": 0.3}, {"causal": False})
    # the variants change only the backward's launches (another dQ path; a constexpr and the grid order of
    # dK/dV): one call with every float argument each (CI time); the forward-only calls once, by the default
    for kw in kws if variant == "default" else kws[:1]:
        out = jagattn.attention(q, k, v, cu, cu, 70, 70, return_lse=True, backend="triton", **kw)
        _backward(out, q, k, v)
    if variant == "default":
        jagattn.attention(q.detach(), k.detach(), v.detach(), cu, cu, 70, 70, causal=True, deterministic=True,
                          backend="triton")  # fmt: skip


def _hstu_case(monkeypatch, deterministic, compact):
    from jagattn.hstu.triton import schedule

    monkeypatch.setattr(schedule, "ENABLED", compact)  # JAGATTN_HSTU_COMPACT=1, opt-in
    gen = generator(2)
    t = sum(LENGTHS)
    cu = cu_seqlens(LENGTHS)
    nt = torch.tensor([2, 0, 5, 1])
    q, k, v = _leaves(*(randn((t, 2, d), generator=gen, dtype=F16) for d in (16, 16, 32)))
    out = jagattn.hstu_attention(
        q, k, v, cu, 70, alpha=0.25, num_targets=nt, contextual_seq_len=2, max_attn_len=9,
        min_full_attn_seq_len=4, deterministic=deterministic, backend="triton",
    )  # fmt: skip
    _backward(out, q, k, v)
    dq = randn((2 * len(LENGTHS), 2, 16), generator=gen, dtype=F16)
    lens = [max(n, 2) for n in LENGTHS]
    cu2 = cu_seqlens(lens)
    k2, v2 = (randn((sum(lens), 2, d), generator=gen, dtype=F16) for d in (16, 32))
    jagattn.hstu_attention_cached(dq, k2, v2, cu2, 70, alpha=0.25, num_targets=nt, backend="triton")


def _gated_delta_case(monkeypatch, per_key, save_t, kkt, wu):
    # the opt-in switches (JAGATTN_GD_SAVE_T, _KKT, _WU) are read into module attributes
    from jagattn.gated_delta import ops
    from jagattn.gated_delta.triton import chunk_fwd

    monkeypatch.setattr(ops, "SAVE_T", save_t)
    monkeypatch.setattr(chunk_fwd, "KKT_VARIANT", kkt)
    monkeypatch.setattr(chunk_fwd, "WU_VARIANT", wu)
    gen = generator(3)
    # per-key gates: one chunk per sequence (the gk kernels are the interpreter's slowest; no launch of theirs
    # depends on the number of chunks)
    lengths = [5, 0, 20] if per_key else [5, 0, 70]
    t = sum(lengths)
    cu = cu_seqlens(lengths)
    q, k = (randn((t, 1, 16), generator=gen, dtype=F16) for _ in range(2))
    v = randn((t, 2, 16), generator=gen, dtype=F16)
    g = torch.nn.functional.logsigmoid(randn((t, 2), generator=gen)).to(F16)
    beta = torch.rand((t, 2), generator=gen).to(F16)
    gk = torch.nn.functional.logsigmoid(randn((t, 2, 16), generator=gen)).to(F16) if per_key else None
    h0 = randn((len(lengths), 2, 16, 16), generator=gen)
    leaves = _leaves(q, k, v, g, beta, h0, *([gk] if per_key else []))
    out = jagattn.gated_delta_rule(
        q, k, v, g, beta, cu_seqlens=cu, initial_state=h0, output_final_state=True, use_qk_l2norm=True,
        gk=gk, backend="triton",
    )  # fmt: skip
    _backward(out, *leaves)
    # no gradients, average length <= 16: the fused recurrent kernel (with and without states), on the first
    # 8 tokens as 8 sequences (one program per sequence and head: CI time)
    n = 8
    short = cu_seqlens([1] * n)
    with torch.no_grad():
        args = tuple(x[:n] for x in (q, k, v, g, beta))
        gk = None if gk is None else gk[:n]
        jagattn.gated_delta_rule(*args, cu_seqlens=short, gk=gk, backend="triton")
        h0s = randn((n, 2, 16, 16), generator=gen)
        jagattn.gated_delta_rule(*args, cu_seqlens=short, initial_state=h0s, output_final_state=True, gk=gk,
                                 backend="triton")  # fmt: skip


def _gated_delta_fp32_train_case(monkeypatch):
    # fp32 training on the token loop (opt-in JAGATTN_GD_FP32_TRAIN=recurrent): the checkpointed forward and the
    # reverse token loop, with per-key gates, a state and l2norm
    from jagattn.gated_delta import backends

    monkeypatch.setattr(backends, "FP32_TRAIN", "recurrent")
    gen = generator(4)
    lengths = [5, 0, 20]
    t = sum(lengths)
    q, k = (randn((t, 1, 16), generator=gen) for _ in range(2))
    v = randn((t, 2, 16), generator=gen)
    g = torch.nn.functional.logsigmoid(randn((t, 2), generator=gen))
    beta = torch.rand((t, 2), generator=gen)
    gk = torch.nn.functional.logsigmoid(randn((t, 2, 16), generator=gen))
    h0 = randn((len(lengths), 2, 16, 16), generator=gen)
    leaves = _leaves(q, k, v, g, beta, gk, h0)
    out = jagattn.gated_delta_rule(
        q, k, v, g, beta, cu_seqlens=cu_seqlens(lengths), initial_state=h0, output_final_state=True,
        use_qk_l2norm=True, gk=gk, backend="triton",
    )  # fmt: skip
    _backward(out, *leaves)


def _package_kernels() -> set[str]:
    found = set()
    for mod in pkgutil.walk_packages(jagattn.__path__, "jagattn."):
        if ".triton." not in mod.name + ".":
            continue
        m = importlib.import_module(mod.name)
        for name, obj in vars(m).items():
            if name.endswith("_kernel") and hasattr(obj, "fn") and not inspect.isfunction(obj):
                if type(obj).__name__.startswith("Gluon"):
                    # Gluon kernels (*/triton/bwd_gluon.py) launch only in eager calls on a Hopper GPU, never
                    # through wrap_triton / Inductor (their guards refuse fake tensors): no contract to check here
                    continue
                py = _python_fn(obj)
                if py.__module__ == m.__name__:
                    found.add(py.__name__)
    return found


CASES = [
    (_attention_case, ("default",)),
    (_attention_case, ("atomic_dq",)),
    (_attention_case, ("head_major_off",)),
    (_hstu_case, (False, False)),
    (_hstu_case, (True, True)),
    (_gated_delta_case, (False, "off", "blocks16", "loop")),
    (_gated_delta_case, (False, "fp32", "dot64", "tiles")),
    (_gated_delta_case, (True, "auto", "blocks16", "loop")),
    (_gated_delta_fp32_train_case, ()),
]


def test_every_kernel_launch_follows_the_contract(checked_launches):
    # one test (not one per case): under pytest-xdist the cases would land on different workers and
    # the coverage check below would see only part of the launches
    LAUNCHED.clear()
    for case, args in CASES:
        with pytest.MonkeyPatch.context() as mp:
            case(mp, *args)
    kernels = _package_kernels()
    assert len(kernels) > 20, kernels
    never = sorted(kernels - set(LAUNCHED))
    assert not never, f"kernels no launch case reached (add a case to CASES): {never}"
