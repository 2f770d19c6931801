"""Device diagnostic (session 6): where does the HSTU forward+backward of a suite row spend its time?

The bench's backward convention (``fwdbwd - fwd``) gave 1.09 ms on the recsys row while the backward
alone (``autograd.grad`` on a saved forward) took 0.59 ms (``hstu_probe.py``, same session). This times
fwd, bwd alone, fwd+bwd (``.backward`` into ``.grad``, as the bench) and the host time per call, and
prints a torch.profiler table (device and host) of fwd+bwd, plus any host-device sync it reports.

``PYTHONPATH=src python3 benchmarks/hstu_fwdbwd_profile.py [--rows recsys,B256-N1024]``
"""

from __future__ import annotations

import argparse
import time

import torch
import triton

from jagattn.bench import suites
from jagattn.bench.cases import HstuFamily


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", default="recsys,B256-N1024")
    ap.add_argument("--cprofile", action="store_true", help="also a cProfile of 50 host-side fwd+bwd calls")
    args = ap.parse_args()
    fam = HstuFamily()
    rows = {r.name.split("/")[-1]: r for r in suites.select_rows(["hstu"], "default")}
    for name in args.rows.split(","):
        profile_row(fam, name, rows[name], args.cprofile)


def profile_row(fam: HstuFamily, name: str, row, with_cprofile: bool) -> None:
    p = fam.build(row, torch.device("cuda"), torch.bfloat16)
    leaves = p.leaves()
    grads = [leaves[n] for n in ("q", "k", "v")]
    gen = torch.Generator(device="cuda").manual_seed(1)
    o = fam.call(p, leaves, "triton")
    do = torch.randn(o.shape, device="cuda", dtype=o.dtype, generator=gen)
    print(f"== {name}: {fam.describe(p)}", flush=True)
    print("   leaves:", {n: (tuple(t.shape), t.stride(), t.requires_grad) for n, t in leaves.items()})

    def fwd():
        return fam.call(p, leaves, "triton")

    def fwdbwd():
        fwd().backward(do)

    fwdbwd()
    print(
        "   grads:",
        {n: (tuple(t.grad.shape), t.grad.stride()) for n, t in leaves.items() if t.grad is not None},
    )
    o = fwd()
    ms = {
        "fwd": triton.testing.do_bench(fwd, warmup=25, rep=100, return_mode="median"),
        "bwd_alone": triton.testing.do_bench(
            lambda: torch.autograd.grad(o, grads, do, retain_graph=True),
            warmup=25,
            rep=100,
            return_mode="median",
        ),
        "fwdbwd": triton.testing.do_bench(
            fwdbwd, warmup=25, rep=100, grad_to_none=grads, return_mode="median"
        ),
    }
    for label, fn in (("fwd", fwd), ("fwdbwd", fwdbwd)):  # host time per call, device not waited for
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(20):
            fn()
        host = (time.perf_counter() - t0) / 20 * 1e3
        torch.cuda.synchronize()
        ms[f"host_{label}"] = host
    print("   ms:", {k: round(v, 4) for k, v in ms.items()}, flush=True)
    if with_cprofile:  # where the host time goes (Python: ours, torch.library, Triton's launcher)
        import cProfile
        import pstats

        torch.cuda.synchronize()
        prof_py = cProfile.Profile()
        prof_py.enable()
        for _ in range(50):
            for g in grads:
                g.grad = None
            fwdbwd()
        prof_py.disable()
        torch.cuda.synchronize()
        pstats.Stats(prof_py).sort_stats("tottime").print_stats(25)
        pstats.Stats(prof_py).sort_stats("cumtime").print_stats(25)
    torch.cuda.set_sync_debug_mode("warn")
    fwdbwd()
    torch.cuda.set_sync_debug_mode(0)
    torch.cuda.synchronize()
    acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=acts) as prof:
        for _ in range(5):
            for g in grads:
                g.grad = None
            fwdbwd()
        torch.cuda.synchronize()
    print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=14, max_name_column_width=60))
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=14, max_name_column_width=60))


if __name__ == "__main__":
    main()
