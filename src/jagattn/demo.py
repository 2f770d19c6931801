"""``python -m jagattn demo``: every op through ``backend="auto"`` on a small jagged batch.

For each op: print the backend table, run forward and backward through ``auto``, check every
output and gradient against the reference with the tolerance rule of SPEC.md section 5 (gold =
reference in fp64 on CPU; allowance = 2x the error of the reference run in the input dtype), and
time forward and forward+backward. On a machine without CUDA the Triton kernels run under the
interpreter (slow; the timings then only show that the path runs). Exit code 1 if any check fails.
"""

from __future__ import annotations

import dataclasses
import statistics
import time
from collections.abc import Callable
from typing import Any

import torch

import jagattn
from jagattn import testing
from jagattn._core import dispatch


@dataclasses.dataclass
class DemoCase:
    family: str
    title: str
    # (device, dtype, generator) -> dict of named arguments; float tensors named in `grads` get grads
    make: Callable[[str, torch.dtype, torch.Generator], dict[str, Any]]
    # (args, backend) -> tuple of outputs (None entries are ignored)
    call: Callable[[dict[str, Any], str], tuple]
    # args -> tuple of outputs computed by the reference in the input dtype (tolerance allowance)
    lowp: Callable[[dict[str, Any]], tuple]
    explain: Callable[[dict[str, Any]], dispatch.Explanation]
    grads: tuple[str, ...]
    output_names: tuple[str, ...]


# ---------------------------------------------------------------------------------------------
# cases


def _attention_case() -> DemoCase:
    from jagattn.attention.reference import attention_reference

    lengths = [37, 0, 1, 100, 64, 65]

    def make(device, dtype, gen):
        cu = testing.cu_seqlens(lengths, device)
        t = sum(lengths)
        return {
            "q": testing.randn((t, 4, 32), dtype=dtype, device=device, generator=gen),
            "k": testing.randn((t, 2, 32), dtype=dtype, device=device, generator=gen),
            "v": testing.randn((t, 2, 32), dtype=dtype, device=device, generator=gen),
            "cu": cu,
            "max": max(lengths),
        }

    def call(a, backend):
        return jagattn.attention(
            a["q"],
            a["k"],
            a["v"],
            a["cu"],
            None,
            a["max"],
            a["max"],
            causal=True,
            return_lse=True,
            backend=backend,
        )

    def lowp(a):
        return attention_reference(
            a["q"], a["k"], a["v"], a["cu"], a["cu"], causal=True, compute_dtype=a["q"].dtype
        )

    def explain(a):
        return jagattn.explain(
            "attention", a["q"], a["k"], a["v"], a["cu"], None, a["max"], a["max"], causal=True
        )

    title = f"attention causal GQA 4:2 D=32, {len(lengths)} seqs {lengths}"
    return DemoCase("attention", title, make, call, lowp, explain, ("q", "k", "v"), ("o", "lse"))


def _hstu_case() -> DemoCase:
    from jagattn.hstu.reference import hstu_reference

    lengths = [50, 0, 1, 97, 64, 33]
    targets = [4, 0, 1, 10, 0, 33]
    n_max = max(lengths)
    kw = dict(alpha=0.25, contextual_seq_len=3, max_attn_len=24, min_full_attn_seq_len=8)

    def make(device, dtype, gen):
        t = sum(lengths)
        return {
            "q": testing.randn((t, 2, 32), dtype=dtype, device=device, generator=gen),
            "k": testing.randn((t, 2, 32), dtype=dtype, device=device, generator=gen),
            "v": testing.randn((t, 2, 16), dtype=dtype, device=device, generator=gen),
            "cu": testing.cu_seqlens(lengths, device),
            "nt": torch.tensor(targets, dtype=torch.int64, device=device),
        }

    def call(a, backend):
        return (
            jagattn.hstu_attention(
                a["q"], a["k"], a["v"], a["cu"], n_max, num_targets=a["nt"], backend=backend, **kw
            ),
        )

    def lowp(a):
        return (
            hstu_reference(
                a["q"],
                a["k"],
                a["v"],
                a["cu"],
                scale_len=n_max,
                num_targets=a["nt"],
                compute_dtype=a["q"].dtype,
                **kw,
            ),
        )

    def explain(a):
        return jagattn.explain("hstu", a["q"], a["k"], a["v"], a["cu"], n_max, num_targets=a["nt"], **kw)

    title = f"hstu targets+context C=3+window W=24 F=8, Dq=32 Dv=16, {len(lengths)} seqs {lengths}"
    return DemoCase("hstu", title, make, call, lowp, explain, ("q", "k", "v"), ("o",))


def _hstu_cached_case() -> DemoCase:
    from jagattn.hstu.reference import hstu_reference

    lengths = [50, 2, 97, 64]
    delta = 2
    n_max = max(lengths)

    def make(device, dtype, gen):
        t = sum(lengths)
        return {
            "dq": testing.randn((len(lengths) * delta, 2, 32), dtype=dtype, device=device, generator=gen),
            "k": testing.randn((t, 2, 32), dtype=dtype, device=device, generator=gen),
            "v": testing.randn((t, 2, 32), dtype=dtype, device=device, generator=gen),
            "cu": testing.cu_seqlens(lengths, device),
        }

    def call(a, backend):
        return (
            jagattn.hstu_attention_cached(
                a["dq"], a["k"], a["v"], a["cu"], n_max, alpha=0.25, backend=backend
            ),
        )

    def lowp(a):
        return (
            hstu_reference(
                a["dq"],
                a["k"],
                a["v"],
                a["cu"],
                alpha=0.25,
                scale_len=n_max,
                delta=delta,
                compute_dtype=a["dq"].dtype,
            ),
        )

    def explain(a):
        return jagattn.explain("hstu", a["dq"], a["k"], a["v"], a["cu"], n_max, alpha=0.25, cached=True)

    title = f"hstu_attention_cached (inference, last {delta} rows), {len(lengths)} seqs {lengths}"
    return DemoCase("hstu", title, make, call, lowp, explain, (), ("o",))


def _gated_delta_case() -> DemoCase:
    from jagattn.gated_delta.reference import gated_delta_reference

    lengths = [70, 0, 1, 130, 63]

    def make(device, dtype, gen):
        t = sum(lengths)
        f32 = torch.float32
        return {
            "q": testing.randn((t, 2, 32), dtype=dtype, device=device, generator=gen),
            "k": testing.randn((t, 2, 32), dtype=dtype, device=device, generator=gen),
            "v": testing.randn((t, 4, 16), dtype=dtype, device=device, generator=gen),
            "g": torch.nn.functional.logsigmoid(
                testing.randn((t, 4), dtype=f32, device=device, generator=gen)
            ),
            "beta": torch.sigmoid(testing.randn((t, 4), dtype=f32, device=device, generator=gen)),
            "h0": testing.randn(
                (len(lengths), 4, 32, 16), dtype=f32, device=device, generator=gen, scale=0.1
            ),
            "cu": testing.cu_seqlens(lengths, device),
        }

    kw = dict(use_qk_l2norm=True)

    def call(a, backend):
        return jagattn.gated_delta_rule(
            a["q"],
            a["k"],
            a["v"],
            a["g"],
            a["beta"],
            cu_seqlens=a["cu"],
            initial_state=a["h0"],
            output_final_state=True,
            backend=backend,
            **kw,
        )

    def lowp(a):
        return gated_delta_reference(
            a["q"],
            a["k"],
            a["v"],
            a["g"],
            a["beta"],
            a["cu"],
            initial_state=a["h0"],
            compute_dtype=a["q"].dtype,
            **kw,
        )

    def explain(a):
        return jagattn.explain(
            "gated_delta",
            a["q"],
            a["k"],
            a["v"],
            a["g"],
            a["beta"],
            cu_seqlens=a["cu"],
            initial_state=a["h0"],
            output_final_state=True,
            **kw,
        )

    title = f"gated_delta_rule GVA 2:4 K=32 V=16, l2norm, initial+final state, {len(lengths)} seqs {lengths}"
    return DemoCase(
        "gated_delta",
        title,
        make,
        call,
        lowp,
        explain,
        ("q", "k", "v", "g", "beta", "h0"),
        ("o", "final_state"),
    )


def cases() -> list[DemoCase]:
    return [_attention_case(), _hstu_case(), _hstu_cached_case(), _gated_delta_case()]


# ---------------------------------------------------------------------------------------------
# running


def _forward_backward(case: DemoCase, args: dict[str, Any], backend: str, cot_seed: int):
    args = dict(args)
    leaves = []
    for name in case.grads:
        if args.get(name) is not None:
            args[name] = args[name].detach().clone().requires_grad_(True)
            leaves.append(args[name])
    outs = case.call(args, backend)
    outs = outs if isinstance(outs, tuple) else (outs,)
    gen = testing.generator(cot_seed)
    loss = 0
    for o in outs:
        if o is not None and o.requires_grad:
            c = torch.randn(tuple(o.shape), generator=gen).to(o.device)
            loss = loss + (torch.nan_to_num(o.float(), neginf=0.0) * c).sum()
    grads = torch.autograd.grad(loss, leaves, allow_unused=True) if leaves and torch.is_tensor(loss) else ()
    grads = tuple(torch.zeros_like(x) if g is None else g for x, g in zip(leaves, grads, strict=False))
    return tuple(o.detach() if o is not None else None for o in outs), grads


def _cast(args: dict[str, Any], device: str, float_dtype: torch.dtype | None) -> dict[str, Any]:
    out = {}
    for k, v in args.items():
        if torch.is_tensor(v):
            v = v.detach().to(device)
            if float_dtype is not None and v.is_floating_point():
                v = v.to(float_dtype)
        out[k] = v
    return out


def _time_ms(fn: Callable[[], Any], device: str, reps: int) -> float:
    times = []
    for _ in range(reps):
        if device == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        if device == "cuda":
            torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def run_case(case: DemoCase, device: str, dtype: torch.dtype, seed: int) -> dict[str, Any]:
    args = case.make(device, dtype, testing.generator(seed))
    table = case.explain(args)
    print(f"\n== {case.title}  [{str(dtype).replace('torch.', '')}, {device}]")
    print(table)
    outs, grads = _forward_backward(case, args, "auto", seed + 1)
    gold_outs, gold_grads = _forward_backward(case, _cast(args, "cpu", torch.float64), "reference", seed + 1)
    low_args = _cast(args, device, None)

    def lowp_call(a, backend):
        return case.lowp(a)

    low_case = dataclasses.replace(case, call=lowp_call)
    low_outs, low_grads = _forward_backward(low_case, low_args, "reference", seed + 1)

    names = [n for n, o in zip(case.output_names, outs, strict=False) if o is not None]
    triples = [
        (n, o, g, lo)
        for n, o, g, lo in zip(case.output_names, outs, gold_outs, low_outs, strict=False)
        if o is not None
    ]
    triples += [
        (f"d{n}", o, g, lo) for n, o, g, lo in zip(case.grads, grads, gold_grads, low_grads, strict=False)
    ]
    failures = []
    worst = 0.0
    for name, o, g, lo in triples:
        try:
            err = testing.check_close(name, o, g, lo)
            scale = testing.rms(g) or 1.0
            worst = max(worst, err.max_abs / scale)
        except AssertionError as exc:
            failures.append(str(exc))
    reps = 1 if device == "cpu" else 20  # CPU: the interpreter's timings only show the path runs
    fwd_ms = _time_ms(lambda: case.call(args, "auto"), device, reps)
    fb_ms = _time_ms(lambda: _forward_backward(case, args, "auto", seed + 1), device, reps)
    status = "ok" if not failures else "FAIL"
    checked = ", ".join(names + [f"d{n}" for n in case.grads])
    print(f"   checked {checked}: {status} (worst max_abs / rms(gold) = {worst:.2e})")
    for f in failures:
        print(f"   FAIL {f}")
    return {
        "family": case.family,
        "op": case.title.split()[0],
        "backend": table.chosen,
        "title": case.title,
        "status": status,
        "worst": worst,
        "fwd_ms": fwd_ms,
        "fwdbwd_ms": fb_ms,
    }


def run_demo(device: str | None = None, seed: int = 0) -> int:
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    dtype = torch.bfloat16 if device == "cuda" else torch.float16
    print(f"jagattn {jagattn.__version__} demo on {device} (torch {torch.__version__})")
    results = [run_case(case, device, dtype, seed) for case in cases()]
    print("\nsummary")
    print(f"  {'op':<22} {'backend':<10} {'check':<6} {'fwd ms':>9} {'fwd+bwd ms':>11}")
    for r in results:
        print(
            f"  {r['op']:<22} {str(r['backend']):<10} {r['status']:<6} {r['fwd_ms']:>9.2f} {r['fwdbwd_ms']:>11.2f}"
        )
    if device == "cpu":
        print("  (CPU: Triton kernels run under the interpreter; timings only show the path runs)")
    failed = [r for r in results if r["status"] != "ok"]
    return 1 if failed else 0
