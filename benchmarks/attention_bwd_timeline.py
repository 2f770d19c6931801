"""Where the attention backward's time goes between its kernels, and where the host's time goes (issue #4).

Session 26's suite read the causal mean-8192 Hkv-16 backward (``fwdbwd - fwd`` of ``do_bench``) at 5.75 ms while
its two kernels' profiled durations summed to ~5.3-5.4 ms. Per row this script prints, in one process:

1. ``do_bench`` of the forward (inputs requiring grad) and of forward + backward, as the suite times them;
2. a GPU timeline of a few do_bench-like repetitions (gradients reset, the 256 MB L2 flush, one call) from
   ``torch.profiler``: every kernel's start relative to the repetition's first kernel, its duration and the idle
   gap before it, so idle GPU time inside a call shows up as gaps;
3. the host time of one forward + backward call (N calls without a sync) against the wall time with a sync;
4. with ``--cprofile``, a cProfile of N calls (own time and cumulative time, top entries).

Usage on the GPU machine: ``PYTHONPATH=src python3 benchmarks/attention_bwd_timeline.py --rows causal-mean8192-hkv16
[--cprofile] [--trace-dir DIR]``.
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


def timeline(fn, grads, reps: int, trace_path: str) -> None:
    flush = torch.empty(256 * 1024 * 1024 // 4, dtype=torch.int32, device="cuda")
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(reps):
            for g in grads:
                g.grad = None
            flush.zero_()
            torch.cuda._sleep(2_000_000)  # let the host run ahead, as in a long do_bench loop
            fn()
        torch.cuda.synchronize()
    prof.export_chrome_trace(trace_path)
    with open(trace_path) as f:
        events = json.load(f)["traceEvents"]
    kernels = sorted((e for e in events if e.get("cat") == "kernel"), key=lambda e: e["ts"])
    # a repetition starts at the kernel after the sleep (torch names it "spin_kernel"; matching "sleep", round 1 of
    # session 27 printed no repetition: its traces, kept in traces.tgz, were read by hand)
    starts = [i + 1 for i, e in enumerate(kernels) if "spin_kernel" in e["name"] and i + 1 < len(kernels)]
    for r, s in enumerate(starts):
        end = starts[r + 1] - 2 if r + 1 < len(starts) else len(kernels)  # up to the next flush
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


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", default="causal-mean8192-hkv16")
    ap.add_argument("-n", type=int, default=50)
    ap.add_argument("--reps", type=int, default=4)
    ap.add_argument("--cprofile", action="store_true")
    ap.add_argument("--trace-dir", default=os.environ.get("OUT", "."))
    args = ap.parse_args()
    fam = cases.AttentionFamily()
    for row in suites.select_rows(["attention"], args.rows):
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
        timeline(fwdbwd, grads, args.reps, os.path.join(args.trace_dir, f"trace_{row.name}.json"))
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
