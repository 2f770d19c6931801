"""Timing of jagattn's Triton gated delta rule on the BENCHMARKS.md rows, against FLA when installed.

Rows (bf16, K=V=128, use_qk_l2norm=True, g = logsigmoid(randn) fp32, beta = sigmoid(randn) bf16,
32768 tokens): H=16 8 seqs, H=32 8 seqs, H=16 64 seqs, H=16 one sequence, H=16 ragged (lengths
uniform in [100, 8000]). Public function with ``backend="triton"`` (dispatch included), no initial
state, no final state. ``triton.testing.do_bench`` median after warm-up (launch configs chosen from shapes,
``triton/common.py::launch_config``);
bwd = (fwd+bwd) - fwd. Peak memory of one fwd+bwd over the inputs. FLOPs (SPEC convention, per
token and value head, chunk 64): forward ``6KV + 6CK + 4CV``. A per-stage breakdown of the
kernels is printed for two rows.

FLA (fla-core, ``chunk_gated_delta_rule`` with ``use_qk_l2norm_in_kernel=True``, packed B=1 with int64
``cu_seqlens``) is timed the same way in the same process when it imports; on Hopper with Triton
< 3.7.1 its gated backward guard is bypassed (``fla.ops.common.chunk_o.TRITON_ABOVE_3_7_1 = True``)
and its backward is labelled "unverified".

Usage on the GPU machine: ``PYTHONPATH=src:/tmp/site python3 benchmarks/gated_delta_triton.py --out $OUT``
(install the carried ``.whl`` to /tmp/site first, as benchmarks/run_device.sh does).
"""

from __future__ import annotations

import argparse
import json
import random
import time

import torch
import torch.nn.functional as F
import triton

import jagattn
from jagattn.gated_delta.triton import chunk_bwd as tb
from jagattn.gated_delta.triton import chunk_fwd as tf
from jagattn.gated_delta.triton.l2norm import l2norm_fwd

TOTAL = 32768
DTYPE = torch.bfloat16  # --dtype fp16: the same rows in fp16
K = V = 128
C = 64


def lengths_for(kind: str, seed: int = 0) -> list[int]:
    if kind.startswith("equal"):
        n = int(kind.split(":")[1])
        return [TOTAL // n] * n
    if kind.startswith("tokens"):  # tokens:T:n, n equal sequences of T tokens in all
        total, n = (int(x) for x in kind.split(":")[1:])
        return [total // n] * n
    rng = random.Random(seed)
    out: list[int] = []
    while sum(out) < TOTAL:
        out.append(rng.randint(100, 8000))
    out[-1] -= sum(out) - TOTAL
    return [n for n in out if n > 0]


ROWS = [
    ("H16-8seqs", 16, "equal:8"),
    ("H32-8seqs", 32, "equal:8"),
    ("H16-64seqs", 16, "equal:64"),
    ("H16-1seq", 16, "equal:1"),
    ("H16-ragged", 16, "ragged"),
]
# small problems (not in "all"; name them in --rows): where bf16 takes the precise path by default
# (common.PRECISE_MAX_TOKEN_HEADS = 65536 tokens x value heads), to time it against the speed path
SMALL_ROWS = [
    ("S-H4-2k", 4, "tokens:2048:4"),
    ("S-H8-8k", 8, "tokens:8192:8"),
    ("S-H16-4k", 16, "tokens:4096:4"),
    ("S-H16-4k-1seq", 16, "tokens:4096:1"),
]


def make(h: int, lengths: list[int], seed: int = 0):
    gen = torch.Generator(device="cuda").manual_seed(seed)
    t = sum(lengths)
    dev = "cuda"
    q = torch.randn(t, h, K, device=dev, generator=gen, dtype=DTYPE)
    k = torch.randn(t, h, K, device=dev, generator=gen, dtype=DTYPE)
    v = torch.randn(t, h, V, device=dev, generator=gen, dtype=DTYPE)
    g = F.logsigmoid(torch.randn(t, h, device=dev, generator=gen, dtype=torch.float32))
    beta = torch.sigmoid(torch.randn(t, h, device=dev, generator=gen, dtype=torch.float32)).to(DTYPE)
    cu = torch.tensor([0] + list(torch.tensor(lengths).cumsum(0)), dtype=torch.int32, device=dev)
    return q, k, v, g, beta, cu


def kernel_times(fn, reps: int = 5, width: int = 70) -> dict[str, float]:
    """Mean CUDA time (ms) per call of every kernel ``fn`` launches, over ``reps`` profiled calls
    after one warm-up call; keys are the kernel names cut to ``width`` characters."""
    from torch.profiler import ProfilerActivity, profile

    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(reps):
            fn()
        torch.cuda.synchronize()
    out: dict[str, float] = {}
    for ev in prof.key_averages():
        t_us = getattr(ev, "self_device_time_total", 0) or 0
        if t_us > 0:
            out[ev.key[:width]] = t_us / 1e3 / reps
    return out


def _fla():
    try:
        import fla.ops.common.chunk_o as chunk_o
        from fla.ops.gated_delta_rule import chunk_gated_delta_rule
    except Exception as exc:  # not installed
        print(f"FLA unavailable: {type(exc).__name__}: {exc}", flush=True)
        return None
    if getattr(chunk_o, "TRITON_ABOVE_3_7_1", True) is False:
        chunk_o.TRITON_ABOVE_3_7_1 = True
    return chunk_gated_delta_rule


def peak_bytes(fn, leaves) -> int:
    """Peak CUDA memory of one ``fn()`` over what was allocated before it (leaves' grads cleared first;
    they hold fn's gradients afterwards)."""
    for x in leaves:
        x.grad = None
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    fn()
    torch.cuda.synchronize()
    return torch.cuda.max_memory_allocated() - base


def _time(fwd_fn, leaves, do):
    def fwd_bwd():
        fwd_fn().backward(do)

    with torch.no_grad():
        fwd_fn()
    fwd_bwd()
    torch.cuda.synchronize()
    t_fwd = triton.testing.do_bench(
        lambda: torch.no_grad()(fwd_fn)(), warmup=50, rep=300, return_mode="median"
    )
    t_all = triton.testing.do_bench(fwd_bwd, warmup=50, rep=300, grad_to_none=leaves, return_mode="median")
    peak = peak_bytes(fwd_bwd, leaves)
    finite = all(torch.isfinite(x.grad).all().item() for x in leaves)
    grads = [x.grad.float().clone() for x in leaves]
    for x in leaves:
        x.grad = None
    return t_fwd, t_all, peak, finite, grads


def _profile_fwd_bwd(fwd_fn, leaves, do) -> dict[str, float]:
    """Per-kernel CUDA ms of one fwd+bwd through the public function, split by pass: ``"fwd <kernel>"``
    from a profile of the forward alone (grad mode on, as before a backward), ``"bwd <kernel>"`` the
    fwd+bwd profile minus that (a kernel both passes launch, e.g. a recomputed state pass, shows in both)."""

    def fwd_bwd():
        fwd_fn().backward(do)
        for x in leaves:
            x.grad = None

    both = kernel_times(fwd_bwd, 5, 60)
    fwd = kernel_times(fwd_fn, 5, 60)
    out = {f"fwd {k_}": v_ for k_, v_ in fwd.items()}
    for k_, v_ in both.items():
        rest = v_ - fwd.get(k_, 0.0)
        if rest > 0.0005:
            out[f"bwd {k_}"] = rest
    return dict(sorted(out.items(), key=lambda kv: (kv[0][:3] != "fwd", -kv[1])))


def bench_row(name: str, h: int, kind: str, fla=None, profile: bool = False) -> dict:
    lengths = lengths_for(kind)
    q, k, v, g, beta, cu = make(h, lengths)
    leaves = [x.requires_grad_() for x in (q, k, v, g, beta)]
    do = torch.randn(q.shape[0], h, V, device="cuda", dtype=DTYPE)

    def fwd():
        return jagattn.gated_delta_rule(*leaves, cu_seqlens=cu, use_qk_l2norm=True, backend="triton")[0]

    t_fwd, t_all, peak, finite, grads = _time(fwd, leaves, do)
    flops = (6 * K * V + 6 * C * K + 4 * C * V) * q.shape[0] * h
    desc = f"{len(lengths)}seqs T={sum(lengths)} [{min(lengths)}..{max(lengths)}]"
    res = {
        "row": name,
        "desc": desc,
        "fwd_ms": t_fwd,
        "fwd_bwd_ms": t_all,
        "bwd_ms": t_all - t_fwd,
        "fwd_mtok_s": q.shape[0] / t_fwd / 1e3,
        "fwd_tflops": flops / t_fwd / 1e9,
        "peak_mem_fwd_bwd_gb": peak / 1e9,
        "grads_finite": finite,
    }
    line = (
        f"{name:12s} {desc:32s} ours fwd {t_fwd:7.3f} ms ({res['fwd_tflops']:5.1f} TFLOP/s)"
        f"  bwd {t_all - t_fwd:7.3f} ms  peak {peak / 1e9:5.2f} GB  finite={finite}"
    )
    if fla is not None:
        cu64 = cu.long()

        def fla_fwd():
            return fla(
                *(x[None] for x in leaves),
                cu_seqlens=cu64,
                use_qk_l2norm_in_kernel=True,
                output_final_state=False,
            )[0][0]

        f_fwd, f_all, f_peak, f_finite, f_grads = _time(fla_fwd, leaves, do)
        with torch.no_grad():
            o_ours, o_fla = fwd().float(), fla_fwd().float()
        agree = {"o": float((o_ours - o_fla).abs().max() / o_fla.abs().max())}
        for n_, a, b in zip(("dq", "dk", "dv", "dg", "dbeta"), grads, f_grads, strict=True):
            agree[n_] = float((a - b).abs().max() / b.abs().max().clamp_min(1e-30))
        res.update(
            fla_fwd_ms=f_fwd,
            fla_bwd_ms=f_all - f_fwd,
            fla_peak_mem_fwd_bwd_gb=f_peak / 1e9,
            fla_bwd_label="unverified",
            speedup_fwd=f_fwd / t_fwd,
            speedup_bwd=(f_all - f_fwd) / (t_all - t_fwd),
            ours_vs_fla_max_rel=agree,
        )
        line += (
            f" | FLA fwd {f_fwd:7.3f} bwd {f_all - f_fwd:7.3f} (unverified) peak {f_peak / 1e9:5.2f} GB"
            f" | x{res['speedup_fwd']:.2f} fwd x{res['speedup_bwd']:.2f} bwd | rel diff {agree}"
        )
    print(line, flush=True)
    if profile:
        # which stage loses: every kernel of one fwd+bwd, ours and FLA's, same inputs
        res["kernels_ours"] = _profile_fwd_bwd(fwd, leaves, do)
        if fla is not None:
            res["kernels_fla"] = _profile_fwd_bwd(fla_fwd, leaves, do)
        for who in ("kernels_ours", "kernels_fla"):
            if who in res:
                tot = {
                    p_: sum(v_ for k_, v_ in res[who].items() if k_.startswith(p_)) for p_ in ("fwd", "bwd")
                }
                print(f"  {who} (ms, fwd total {tot['fwd']:.3f}, bwd total {tot['bwd']:.3f}):")
                for k_, v_ in res[who].items():
                    print(f"    {v_:7.3f}  {k_}", flush=True)
    return res


def breakdown(h: int, kind: str, variant_kernels: list[str] | None = None) -> dict:
    """Per-stage times (ms) of the kernels for one row (each launcher timed alone), with the launch
    config variants of the sequential and output kernels."""
    from jagattn.gated_delta.triton import common

    lengths = lengths_for(kind)
    q, k, v, g, beta, cu = make(h, lengths)
    qn, kn = l2norm_fwd(q), l2norm_fwd(k)
    do = torch.randn_like(v)
    scale = K**-0.5
    bench = lambda f: triton.testing.do_bench(f, warmup=10, rep=60, return_mode="median")  # noqa: E731
    out = {}
    out["l2norm(q,k)"] = bench(lambda: (l2norm_fwd(q), l2norm_fwd(k)))
    out["prepare(kkt+solve+wu)"] = bench(lambda: tf._prepare(kn, v, g, beta, cu))
    gc, ainv, w, u = tf._prepare(kn, v, g, beta, cu)
    out["state_pass"] = bench(
        lambda: tf._state_pass(kn, w, u, gc, None, cu, in_dtype=v.dtype, store_final=True)
    )
    out["chunk_fwd(total)"] = bench(lambda: tf.chunk_fwd(qn, kn, v, g, beta, None, cu, scale))
    out["chunk_bwd(total)"] = bench(lambda: tb.chunk_bwd(qn, kn, v, g, beta, None, cu, scale, do, None))
    variants = {}
    # per-kernel times of one forward and one backward (CUDA time from the profiler)
    try:
        whole = (
            ("fwd", lambda: tf.chunk_fwd(qn, kn, v, g, beta, None, cu, scale)),
            ("bwd", lambda: tb.chunk_bwd(qn, kn, v, g, beta, None, cu, scale, do, None)),
        )
        for label, fn in whole:
            for name, ms in kernel_times(fn, 5, 60).items():
                variants[f"kernel {label} {name}"] = ms
    except Exception as exc:  # the profiler is a diagnostic, never a reason to lose the timings
        variants["profiler"] = f"{type(exc).__name__}: {exc}"
    bwd = lambda: tb.chunk_bwd(qn, kn, v, g, beta, None, cu, scale, do, None)  # noqa: E731
    plans = {
        "fwd_kkt_solve": lambda: tf._prepare(kn, v, g, beta, cu),
        "fwd_wu": lambda: tf._prepare(kn, v, g, beta, cu, saved=(gc, ainv)),  # the w/u kernel alone
        "fwd_o": lambda: tf.chunk_fwd(qn, kn, v, g, beta, None, cu, scale),
        "bwd_dv_local": bwd,
        "fwd_h": lambda: tf._state_pass(kn, w, u, gc, None, cu, in_dtype=v.dtype, store_final=True),
        "bwd_dhu": bwd,
        "bwd_dqkwg": bwd,
        "bwd_wy": bwd,
    }
    for kern, fn in plans.items():
        if variant_kernels is not None and kern not in variant_kernels:
            continue
        for cfg in common.CANDIDATES[kern]:
            # the sequential passes: BV >= 32 at <= 4 warps and >= 2 stages (the rest lost in session 2)
            if kern in ("fwd_h", "bwd_dhu") and (cfg[0] < 32 or cfg[1] > 4 or cfg[2] < 2):
                continue
            if kern == "fwd_kkt_solve" and cfg[0] == 1:
                continue
            common.CONFIG_OVERRIDE[kern] = cfg
            try:
                t_ = bench(fn)
            except Exception as exc:  # a config that fails to compile (shared memory) is reported
                t_ = f"{type(exc).__name__}"
            variants[f"{kern} {cfg}"] = t_
        common.CONFIG_OVERRIDE.clear()
    out["variants"] = variants
    print(
        f"breakdown H={h} {kind}: "
        + ", ".join(f"{k_} {v_:.3f}" for k_, v_ in out.items() if k_ != "variants")
    )
    for k_, v_ in variants.items():
        print(f"   {k_}: {v_ if isinstance(v_, str) else f'{v_:.3f}'}", flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=".")
    ap.add_argument("--rows", default="all")
    ap.add_argument("--no-fla", action="store_true")
    ap.add_argument("--no-breakdown", action="store_true")
    ap.add_argument("--breakdown-rows", default="H16-8seqs,H16-1seq")
    ap.add_argument(
        "--profile-rows", default="H16-8seqs", help="rows with a per-kernel profile, ours and FLA"
    )
    ap.add_argument("--variants", help="kernels whose launch-config variants are timed (default: all listed)")
    ap.add_argument("--dtype", choices=("bf16", "fp16", "fp32"), default="bf16")
    args = ap.parse_args()
    global DTYPE
    DTYPE = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[args.dtype]
    env = {
        "gpu": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "triton": triton.__version__,
        "dtype": args.dtype,
        "time": time.strftime("%Y-%m-%d %H:%M:%S"),
    }
    print(env, flush=True)
    fla = None if args.no_fla else _fla()
    if fla is not None:
        from importlib.metadata import version

        env["fla"] = version("fla-core")
    results = []
    stages: dict = {}

    def dump() -> None:  # after every step: a timeout later still leaves the rows on disk
        with open(f"{args.out}/gated_delta_bench.json", "w") as f:
            json.dump({"env": env, "rows": results, "stages": stages}, f, indent=1)

    for name, h, kind in ROWS + SMALL_ROWS:
        if (args.rows != "all" or (name, h, kind) in SMALL_ROWS) and name not in args.rows.split(","):
            continue
        results.append(bench_row(name, h, kind, fla, profile=name in args.profile_rows.split(",")))
        dump()
    if not args.no_breakdown:
        for label, h, kind in (("H16-8seqs", 16, "equal:8"), ("H16-1seq", 16, "equal:1")):
            if label not in args.breakdown_rows.split(","):
                continue
            stages[label] = breakdown(h, kind, args.variants.split(",") if args.variants else None)
            dump()


if __name__ == "__main__":
    main()
