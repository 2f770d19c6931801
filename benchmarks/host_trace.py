"""A host-side trace of one HSTU forward + backward (issue #5): every CPU event of torch.profiler (both threads: the
caller's and autograd's device thread), with its start relative to the call's start, its duration and thread, plus
the kernels' launch-to-start delays, so host time that is neither our Python nor a launch shows up by name.

Usage on the GPU machine: ``PYTHONPATH=src python3 benchmarks/host_trace.py [--rows recsys] [--depth 3]``
"""

from __future__ import annotations

import argparse
import json
import os

os.environ.setdefault("JAGATTN_AUTOTUNE", "0")

import torch  # noqa: E402
from torch.profiler import ProfilerActivity, profile  # noqa: E402

from jagattn.bench import cases, suites  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", default="recsys")
    ap.add_argument("--min-us", type=float, default=4.0)
    args = ap.parse_args()
    fam = cases.HstuFamily()
    out_dir = os.environ.get("OUT", ".")
    for row in suites.select_rows(["hstu"], args.rows):
        p = fam.build(row, torch.device("cuda"), torch.bfloat16)
        leaves = p.leaves()
        do = torch.randn_like(fam.call(p, leaves, "triton"))

        def fwdbwd():
            for t in leaves.values():
                t.grad = None
            fam.call(p, leaves, "triton").backward(do)

        for _ in range(5):
            fwdbwd()
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], with_stack=False) as prof:
            for _ in range(3):
                torch.cuda.synchronize()
                with torch.profiler.record_function("## call"):
                    fwdbwd()
            torch.cuda.synchronize()
        path = os.path.join(out_dir, f"host_trace_{row.name.split('/')[-1]}.json")
        prof.export_chrome_trace(path)
        ev = json.load(open(path))["traceEvents"]
        calls = sorted((e for e in ev if e.get("name") == "## call"), key=lambda e: e["ts"])
        last = calls[-1]
        t0, t1 = last["ts"], last["ts"] + last["dur"]
        print(f"row {row.name}: call span {last['dur']:.1f} us (host, the last of 3)")
        cpu = sorted(
            (e for e in ev if e.get("ph") == "X" and e.get("cat") in ("cpu_op", "user_annotation", "cuda_runtime",
                                                                         "python_function")
             and t0 <= e["ts"] <= t1 and e.get("dur", 0) >= args.min_us),
            key=lambda e: e["ts"],
        )  # fmt: skip
        for e in cpu:
            print(f"  +{e['ts'] - t0:8.1f} dur {e['dur']:8.1f} tid {str(e.get('tid'))[-6:]:>6s} {e['cat'][:12]:12s} "
                  f"{e['name'][:80]}")  # fmt: skip
        ks = sorted((e for e in ev if e.get("cat") == "kernel" and e["ts"] >= t0), key=lambda e: e["ts"])
        for e in ks[:6]:
            print(f"  kernel +{e['ts'] - t0:8.1f} dur {e['dur']:8.1f} {e['name'][:60]}")


if __name__ == "__main__":
    main()
