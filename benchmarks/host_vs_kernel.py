"""Is a suite row bound by the host or by its kernels? Ours against a peer, one process (issue #5).

Per row and implementation (``triton`` = jagattn, and ``gr_triton`` on the hstu family when its files are on
PYTHONPATH), for the forward (inputs requiring grad, as the suite times it) and forward + backward:

- ``bench``: ``do_bench`` median, exactly as the suite (L2 flush and gradient reset per repetition);
- ``kern``: the summed durations of the call's kernels per repetition (device trace of a do_bench run, flush and
  gradient-reset kernels left out), median;
- ``host``: the Python time of one call while the GPU is kept busy ahead of it (a GPU sleep before a burst of
  ``-n`` calls, no sync inside the burst), median of 5 bursts: what the host needs per call when it never waits.

``bench`` close to ``kern``: kernel-bound. ``bench`` well above ``kern`` and ``host`` near or above ``bench``: the
host sets the time (the suite's rows then move with the host machine's speed).

Usage on the GPU machine: ``PYTHONPATH=src:peers/gr python3 benchmarks/host_vs_kernel.py --family hstu
--rows B256-N1024,recsys [--impls triton,gr_triton] [-n 40]``
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time

os.environ.setdefault("JAGATTN_AUTOTUNE", "0")

import torch  # noqa: E402
from triton.testing import do_bench  # noqa: E402

from jagattn.bench import cases, suites  # noqa: E402


def _events(prof) -> list:
    """The chrome-trace events of a finished ``torch.profiler`` run."""
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "t.json")
        prof.export_chrome_trace(path)
        with open(path) as f:
            return json.load(f)["traceEvents"]


def _kernel_sum(fn, grads) -> float:
    """Median over do_bench repetitions of the summed kernel durations of one call (ms)."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        do_bench(fn, warmup=10, rep=60, grad_to_none=grads or None, return_mode="median")
        torch.cuda.synchronize()
    events = _events(prof)
    kernels = sorted(
        (e for e in events if e.get("cat") in ("kernel", "gpu_memset", "gpu_memcpy")), key=lambda e: e["ts"]
    )
    reps, cur = [], []
    for e in kernels:
        # the 256 MB flush (do_bench's cache.zero_()) splits the repetitions
        if "elementwise" in e["name"] and "FillFunctor" in e["name"] and e["dur"] > 30:
            if cur:
                reps.append(sum(x["dur"] for x in cur))
            cur = []
        elif not ("FillFunctor" in e["name"] and e["dur"] < 3):  # grad_to_none / tiny fills aside
            cur.append(e)
    if cur:
        reps.append(sum(x["dur"] for x in cur))
    reps = reps[len(reps) // 4 :]  # past the warm-up
    return statistics.median(reps) / 1e3 if reps else float("nan")


def _host(fn, grads, n: int) -> float:
    """ms of host time per call, the GPU busy ahead of every burst (no waiting on the device)."""
    out = []
    for _ in range(5):
        torch.cuda.synchronize()
        torch.cuda._sleep(int(2e6 * n))  # ~n ms of GPU work queued first: the host never waits on it
        t0 = time.perf_counter()
        for _ in range(n):
            for g in grads:
                g.grad = None
            fn()
        out.append((time.perf_counter() - t0) / n * 1e3)
        torch.cuda.synchronize()
    return statistics.median(out)


def _api_calls(fn, grads, n: int) -> str:
    """CUDA runtime / driver calls of ``n`` calls (torch.profiler, host side): name, count, total ms, max ms. A
    synchronizing call (``cudaStreamSynchronize``, ``cudaMemcpy`` to the host, ``cudaFree``...) inside a call makes the
    host wait for the GPU, so the host can no longer run ahead of it."""
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(n):
            for g in grads:
                g.grad = None
            fn()
        torch.cuda.synchronize()
    events = _events(prof)
    agg: dict[str, list[float]] = {}
    for e in events:
        if e.get("cat") in ("cuda_runtime", "cuda_driver") and "dur" in e:
            agg.setdefault(e["name"], []).append(e["dur"] / 1e3)
    rows = sorted(agg.items(), key=lambda kv: -sum(kv[1]))
    return "; ".join(f"{k} x{len(v)} {sum(v):.3f} ms (max {max(v):.3f})" for k, v in rows[:12])


def row_calls(family: str, rows: str, impls: str):
    """Per selected row and implementation (``triton`` = jagattn, or a peer adapter of the bench: gr_triton,
    torch_varlen, flex, fla, ...): ``(row, impl, fwd, fwdbwd, grads)`` with the inputs built once per row in bf16, the
    forward + backward already run three times (compile, autotune) and the GPU synchronized. A peer that is not
    installed / not on PYTHONPATH is reported and skipped."""
    fam = {
        "attention": cases.AttentionFamily,
        "hstu": cases.HstuFamily,
        "gated_delta": cases.GatedDeltaFamily,
    }[family]()
    for row in suites.select_rows([family], rows):
        p = fam.build(row, torch.device("cuda"), torch.bfloat16)
        leaves = p.leaves()
        grads = [leaves[n] for n in p.grad_names]
        for impl in impls.split(","):
            if impl == "triton":
                call = lambda t, p=p: fam.call(p, t, "triton")  # noqa: E731
            else:
                from jagattn.bench.impls import peers_of

                peer = next((x for x in peers_of(family) if x.name == impl), None)
                if peer is None:
                    raise SystemExit(f"--impls: no {impl!r} in the {family} family")
                try:
                    call = peer.prepare(p).fn
                except Exception as exc:  # not installed / not on PYTHONPATH
                    print(f"{row.name} {impl}: unavailable ({exc})", flush=True)
                    continue
            do = torch.randn_like(call(leaves))

            def fwd(call=call, leaves=leaves):
                return call(leaves)

            def fwdbwd(call=call, do=do, leaves=leaves):
                call(leaves).backward(do)

            for _ in range(3):
                for g in grads:
                    g.grad = None
                fwdbwd()
            torch.cuda.synchronize()
            yield row, impl, fwd, fwdbwd, grads


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--family", default="hstu", choices=("attention", "hstu", "gated_delta"))
    ap.add_argument("--rows", default="B256-N1024,recsys")
    ap.add_argument("--impls", default="triton,gr_triton")
    ap.add_argument("-n", type=int, default=40)
    ap.add_argument(
        "--api", action="store_true", help="also list the CUDA API calls of 10 forward + backward calls"
    )
    args = ap.parse_args()
    for row, impl, fwd, fwdbwd, grads in row_calls(args.family, args.rows, args.impls):
        res = {}
        for name, fn, gr in (("fwd", fwd, []), ("fwdbwd", fwdbwd, grads)):
            bench = do_bench(fn, warmup=25, rep=200, grad_to_none=gr or None, return_mode="median")
            res[name] = (bench, _kernel_sum(fn, gr), _host(fn, gr, args.n))
        print(
            f"{row.name.split('/')[-1]:>12} {impl:>10}: "
            + "; ".join(f"{k} bench {b:.3f} kern {kk:.3f} host {h:.3f}" for k, (b, kk, h) in res.items())
            + f"; bwd bench {res['fwdbwd'][0] - res['fwd'][0]:.3f} kern {res['fwdbwd'][1] - res['fwd'][1]:.3f}",
            flush=True,
        )
        if args.api:
            print(f"    api calls of 10 fwdbwd: {_api_calls(fwdbwd, grads, 10)}", flush=True)


if __name__ == "__main__":
    main()
