"""Where a family's backward time goes between its kernels, and where the host's time goes (issues #4, #5).

Session 26's suite read the causal mean-8192 Hkv-16 backward (``fwdbwd - fwd`` of ``do_bench``) at 5.75 ms while
its two kernels' profiled durations summed to ~5.3-5.4 ms. Per row this script prints, in one process:

1. ``do_bench`` of the forward (inputs requiring grad) and of forward + backward, as the suite times them;
2. a GPU timeline of a few do_bench-like repetitions (gradients reset, the 256 MB L2 flush, one call) from
   ``torch.profiler``: every kernel's start relative to the repetition's first kernel, its duration and the idle
   gap before it, so idle GPU time inside a call shows up as gaps;
3. the host time of one forward + backward call (N calls without a sync) against the wall time with a sync;
4. with ``--cprofile``, a cProfile of N calls (own time and cumulative time, top entries).

With ``--no-sleep`` the repetitions run back to back as do_bench's loop does (the host runs ahead only as far as it
is faster than the GPU), so a host-bound call shows its idle gaps too; by default a 2 ms GPU sleep before each call
lets the host run ahead, which leaves only the gaps of a host-device sync.

Usage on the GPU machine: ``PYTHONPATH=src python3 benchmarks/bwd_timeline.py [--family hstu] --rows B256-N1024
[--no-sleep] [--cprofile] [--trace-dir DIR]`` (session 27 ran it as ``attention_bwd_timeline.py``).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import time

os.environ.setdefault("JAGATTN_AUTOTUNE", "0")

import torch  # noqa: E402
from triton.testing import do_bench  # noqa: E402

from jagattn.bench import cases, suites  # noqa: E402


def timeline(fn, grads, reps: int, trace_path: str, sleep: bool = True) -> None:
    flush = torch.empty(256 * 1024 * 1024 // 4, dtype=torch.int32, device="cuda")
    from torch.profiler import ProfilerActivity, profile

    # without the sleep, only the device is traced: host tracing would slow the host it is meant to show
    with profile(activities=[ProfilerActivity.CUDA] + ([ProfilerActivity.CPU] if sleep else [])) as prof:
        for _ in range(reps):
            for g in grads:
                g.grad = None
            flush.zero_()
            if sleep:
                torch.cuda._sleep(2_000_000)  # let the host run ahead, as in a long do_bench loop
            fn()
        torch.cuda.synchronize()
    prof.export_chrome_trace(trace_path)
    with open(trace_path) as f:
        events = json.load(f)["traceEvents"]
    kernels = sorted((e for e in events if e.get("cat") == "kernel"), key=lambda e: e["ts"])

    # a repetition starts at the kernel after the sleep (torch names it "spin_kernel"; matching "sleep", round 1 of
    # session 27 printed no repetition: its traces, kept in traces.tgz, were read by hand)
    # without the sleep a repetition starts after the flush (the 256 MB zero_, an elementwise kernel of ~0.5 ms)
    def marks(e) -> bool:
        return "spin_kernel" in e["name"] if sleep else "elementwise" in e["name"] and e["dur"] > 300

    starts = [i + 1 for i, e in enumerate(kernels) if marks(e) and i + 1 < len(kernels)]
    for r, s in enumerate(starts):
        end = (
            starts[r + 1] - (2 if sleep else 1) if r + 1 < len(starts) else len(kernels)
        )  # up to the next flush
        t0 = kernels[s]["ts"]
        prev_end = t0
        total_gap = 0.0
        rows = []
        for e in kernels[s:end]:
            gap = e["ts"] - prev_end
            total_gap += max(gap, 0.0)
            rows.append(f"    +{e['ts'] - t0:9.1f} us  dur {e['dur']:8.1f}  gap {gap:7.1f}  {e['name'][:90]}")
            prev_end = e["ts"] + e["dur"]
        span = prev_end - t0
        print(f"  rep {r}: span {span / 1e3:.3f} ms, kernels {len(rows)}, idle gaps {total_gap / 1e3:.3f} ms")
        if r in (0, len(starts) - 1):
            print("\n".join(rows))


def bench_trace(fn, grads) -> None:
    """do_bench of ``fn`` (as the suite runs it) under a device-only trace: per repetition (split at the L2 flush) the
    span from its first kernel's start to its last kernel's end and the kernels' summed durations, medians over the
    repetitions, against do_bench's own median (event to event)."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        t = do_bench(fn, warmup=25, rep=200, grad_to_none=grads, return_mode="median")
        torch.cuda.synchronize()
    path = os.path.join(os.environ.get("OUT", "."), "bench_trace.json")
    prof.export_chrome_trace(path)
    with open(path) as f:
        kernels = sorted(
            (
                e
                for e in json.load(f)["traceEvents"]
                if e.get("cat") in ("kernel", "gpu_memset", "gpu_memcpy")
            ),
            key=lambda e: e["ts"],
        )
    os.remove(path)
    reps, cur = [], []
    for e in kernels:
        if "elementwise" in e["name"] and e["dur"] > 30:  # the flush
            if cur:
                reps.append(cur)
            cur = []
        else:
            cur.append(e)
    if cur:
        reps.append(cur)
    reps = [r for r in reps if len(r) == len(reps[-1])]
    spans = sorted((r[-1]["ts"] + r[-1]["dur"] - r[0]["ts"]) / 1e3 for r in reps)
    sums = sorted(sum(e["dur"] for e in r) / 1e3 for r in reps)
    per = {}
    for r in reps:
        for e in r:
            per.setdefault(e["name"][:40], []).append(e["dur"] / 1e3)
    med = {k: sorted(v)[len(v) // 2] for k, v in per.items()}
    print(
        f"  under do_bench: {len(reps)} reps, do_bench median {t:.3f} ms, span median {spans[len(spans) // 2]:.3f}, "
        f"kernel sum median {sums[len(sums) // 2]:.3f}; kernels {', '.join(f'{k} {v:.3f}' for k, v in med.items())}",
        flush=True,
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--family", default="attention", choices=("attention", "hstu", "gated_delta"))
    ap.add_argument("--rows", default="causal-mean8192-hkv16")
    ap.add_argument("--no-sleep", dest="sleep", action="store_false")
    ap.add_argument("--bench-trace", action="store_true", help="also trace do_bench itself (bench_trace)")
    ap.add_argument("-n", type=int, default=50)
    ap.add_argument("--reps", type=int, default=4)
    ap.add_argument("--cprofile", action="store_true")
    ap.add_argument("--trace-dir", default=os.environ.get("OUT", "."))
    args = ap.parse_args()
    fam = {
        "attention": cases.AttentionFamily,
        "hstu": cases.HstuFamily,
        "gated_delta": cases.GatedDeltaFamily,
    }[args.family]()
    for row in suites.select_rows([args.family], args.rows):
        p = fam.build(row, torch.device("cuda"), torch.bfloat16)
        leaves = p.leaves()
        grads = [leaves[n] for n in p.grad_names]
        do = torch.randn_like(fam.call(p, leaves, "triton"))

        def fwd(p=p, leaves=leaves):
            return fam.call(p, leaves, "triton")

        def fwdbwd(p=p, leaves=leaves, do=do):
            fam.call(p, leaves, "triton").backward(do)

        for _ in range(3):
            for g in grads:
                g.grad = None
            fwdbwd()
        torch.cuda.synchronize()
        t_f = do_bench(fwd, warmup=25, rep=200, return_mode="median")
        t_fb = do_bench(fwdbwd, warmup=25, rep=200, grad_to_none=grads, return_mode="median")
        print(
            f"row {row.name}: do_bench fwd {t_f:.3f} ms, fwdbwd {t_fb:.3f} ms, bwd {t_fb - t_f:.3f} ms",
            flush=True,
        )
        if args.bench_trace:
            bench_trace(fwdbwd, grads)
        name = row.name.split("/")[-1]
        timeline(fwdbwd, grads, args.reps, os.path.join(args.trace_dir, f"trace_{name}.json"), args.sleep)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(args.n):
            for g in grads:
                g.grad = None
            fwdbwd()
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        t2 = time.perf_counter()
        print(
            f"  host {1e3 * (t1 - t0) / args.n:.3f} ms/call, wall {1e3 * (t2 - t0) / args.n:.3f} ms/call",
            flush=True,
        )
        if args.cprofile:
            pr = cProfile.Profile()
            pr.enable()
            for _ in range(args.n):
                for g in grads:
                    g.grad = None
                fwdbwd()
            torch.cuda.synchronize()
            pr.disable()
            for key in ("tottime", "cumulative"):
                s = io.StringIO()
                pstats.Stats(pr, stream=s).sort_stats(key).print_stats(35)
                print(s.getvalue())


if __name__ == "__main__":
    main()
