"""HSTU dense-grid order A/B (issue #5, session 18): ``JAGATTN_HSTU_L2_GROUP`` values, same process, alternated.

Session 17's Nsight Compute round showed every HSTU kernel DRAM-bound on the H100 (forward B256-N1024: 86% of
DRAM bandwidth, 9% L2 hit rate) because the dense grid ran the heaviest block of every (sequence, head) pair in
the batch before the next block of any, so each pair's K/V (Q/dO for dK/dV) came from DRAM once per block.
``triton/schedule.py`` ``_grouped`` now orders the grid in runs of ``L2_GROUP`` pairs; ``L2_GROUP >= B*H`` is
the old order. This script times, per hstu suite row (built as ``jagattn bench`` builds it, bf16, through the
public ``jagattn.hstu_attention(..., backend="triton")`` via the bench's implementation), the forward and the
backward (``torch.autograd.grad`` on one saved forward) for each group value in ``--groups`` (``old`` = B*H),
``--repeats`` times in alternation, checks that every group gives bit-identical outputs and gradients (a
program's arithmetic does not depend on when it runs), and times GR's Triton HSTU on the same inputs when
``peers/gr`` is on the path (ratios in the same process).

    JAGATTN_GIT_SHA=<sha> PYTHONPATH=src:peers/gr python3 benchmarks/hstu_l2_group_ab.py --out $OUT

Writes ``$OUT/hstu_l2_group_ab.log`` and ``.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

os.environ.setdefault("JAGATTN_AUTOTUNE", "0")  # first-listed configs, as the suite bench runs

import torch  # noqa: E402
import triton  # noqa: E402


def _set_group(g: str) -> None:
    if g != "peer":
        os.environ["JAGATTN_HSTU_L2_GROUP"] = str(1 << 30) if g == "old" else g


def time_impl(impl, p, groups: list[str], repeats: int) -> dict:
    """Per group value (or the peer): forward and backward ms lists, and bit-equality with the first."""
    fn = impl.prepare(p).fn
    leaves = p.leaves()
    inputs = [t for t in leaves.values() if t.requires_grad]
    do = torch.randn_like(fn(leaves))
    outs = {}
    for g in groups:  # compile each variant and keep its results
        _set_group(g)
        o = fn(leaves)
        grads = torch.autograd.grad(o, inputs, do)
        outs[g] = [o.detach().clone()] + [x.clone() for x in grads]
    base = outs[groups[0]]
    same = {g: all(torch.equal(a, b) for a, b in zip(base, outs[g], strict=True)) for g in groups}
    del outs
    times = {g: {"fwd": [], "bwd": []} for g in groups}
    for _ in range(repeats):
        for g in groups:
            _set_group(g)
            times[g]["fwd"].append(bench(lambda: fn(leaves)))
            o = fn(leaves)
            times[g]["bwd"].append(bench(lambda o=o: torch.autograd.grad(o, inputs, do, retain_graph=True)))
    os.environ.pop("JAGATTN_HSTU_L2_GROUP", None)
    return {
        (impl.name if g == "peer" else f"group={g}"): {
            "fwd_ms": times[g]["fwd"],
            "bwd_ms": times[g]["bwd"],
            "bitwise_same_as_first": same[g],
        }
        for g in groups
    }


KERNEL_TIME = False  # --kernel-time: sum of the profiled kernels' device time instead of wall time


def bench(fn) -> float:
    if not KERNEL_TIME:
        return triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median")
    fn()
    torch.cuda.synchronize()
    n = 20
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(n):
            fn()
        torch.cuda.synchronize()
    # every CUDA kernel the call launched (ours: the hstu kernels; GR: its kernels and any copies)
    total_us = sum(e.device_time_total for e in prof.key_averages() if e.device_time_total > 0)
    return total_us / 1e3 / n


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=".")
    ap.add_argument("--rows", default="B256-N1024,B128-N2048,B64-N4096,recsys,ctx6-w256")
    ap.add_argument("--groups", default="old,1,8,32")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--no-gr", action="store_true")
    ap.add_argument("--deadline", type=float, default=1e9, help="seconds; later rows are skipped")
    ap.add_argument("--kernel-time", action="store_true", help="device time of the kernels (torch profiler)")
    args = ap.parse_args()
    global KERNEL_TIME
    KERNEL_TIME = args.kernel_time
    t0 = time.time()

    from jagattn.bench import impls, suites
    from jagattn.bench.cases import FAMILIES

    fam = FAMILIES["hstu"]
    spec = "triton" if args.no_gr else "triton,gr_triton"
    chosen, notes = impls.resolve("hstu", spec)
    rows = {r.name: r for r in suites.all_rows() if r.family == "hstu"}
    log_path = os.path.join(args.out, "hstu_l2_group_ab.log")

    def log(msg: str) -> None:
        print(msg, flush=True)
        with open(log_path, "a") as f:
            f.write(msg + "\n")

    result = {
        "provenance": {
            "sha": os.environ.get("JAGATTN_GIT_SHA", "?"),
            "gpu": torch.cuda.get_device_name(),
            "torch": torch.__version__,
            "triton": triton.__version__,
            "argv": sys.argv,
        },
        "rows": {},
    }
    log(f"{result['provenance']}  impls {[i.name for i in chosen]} {notes}")

    for row_name in args.rows.split(","):
        if time.time() - t0 > args.deadline:
            log(f"{row_name}: skipped (deadline)")
            continue
        p = fam.build(rows[row_name], torch.device("cuda"), torch.bfloat16)
        rec = {}
        for impl in chosen:
            groups = args.groups.split(",") if impl.name == "triton" else ["peer"]
            for name, r in time_impl(impl, p, groups, args.repeats).items():
                rec[name] = r
                fwd, bwd = statistics.median(r["fwd_ms"]), statistics.median(r["bwd_ms"])
                log(
                    f"{row_name:12s} {name:14s} fwd {fwd:7.3f} ms {r['fwd_ms']}  bwd {bwd:7.3f} ms "
                    f"{r['bwd_ms']}  same-bits-as-{groups[0]} {r['bitwise_same_as_first']}"
                )
            torch.cuda.empty_cache()
        if "gr_triton" in rec:
            gr = rec["gr_triton"]
            for name, r in rec.items():
                if name.startswith("group="):
                    xf = statistics.median(gr["fwd_ms"]) / statistics.median(r["fwd_ms"])
                    xb = statistics.median(gr["bwd_ms"]) / statistics.median(r["bwd_ms"])
                    log(f"{row_name:12s} {name:14s} x vs GR: fwd {xf:.3f}  bwd {xb:.3f}")
        result["rows"][row_name] = rec
        with open(os.path.join(args.out, "hstu_l2_group_ab.json"), "w") as f:
            json.dump(result, f, indent=1)
    log(f"elapsed {time.time() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
