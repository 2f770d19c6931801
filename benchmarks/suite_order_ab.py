"""Does the suite's order of implementations move the ratios? (issue #5, session 44)

Session 44 found our HSTU backward running under the software power cap (~1650 MHz on B256, GR's at ~1965) and the
clock dipping as a timed phase starts after an idle stretch. The suite times each row's implementations one after
the other (``--backends`` order: ours first), each as do_bench of the forward then of forward + backward (warm-up 25
ms, 100 ms of repetitions, as ``jagattn bench``'s defaults), with seconds of low GPU load between rows (the
correctness gate). This script times the same phases in both orders, alternated, with a 2 s idle pause before each
pass, in one process (one autotune for GR), and prints the backward (``fwdbwd - fwd``) of each implementation and the
ratio per pass.

Usage on the GPU machine: ``PYTHONPATH=src:peers/gr python3 benchmarks/suite_order_ab.py --rows B256-N1024,ctx6-w256
[--passes 3]``
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("JAGATTN_AUTOTUNE", "0")

from host_vs_kernel import row_calls  # noqa: E402  (benchmarks/, the script's folder)
from triton.testing import do_bench  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", default="B256-N1024,ctx6-w256")
    ap.add_argument("--passes", type=int, default=3)
    ap.add_argument("--pause-s", type=float, default=2.0)
    args = ap.parse_args()
    by_row: dict[str, dict] = {}
    for row, impl, fwd, fwdbwd, grads in row_calls("hstu", args.rows, "triton,gr_triton"):
        by_row.setdefault(row.name.split("/")[-1], {})[impl] = (fwd, fwdbwd, grads)
    for name, calls in by_row.items():
        if len(calls) < 2:
            print(f"{name}: GR unavailable", flush=True)
            continue
        for p in range(args.passes):
            for order in (("triton", "gr_triton"), ("gr_triton", "triton")):
                time.sleep(args.pause_s)
                t = {}
                for impl in order:
                    fwd, fwdbwd, grads = calls[impl]
                    f = do_bench(fwd, warmup=25, rep=100, return_mode="median")
                    fb = do_bench(fwdbwd, warmup=25, rep=100, grad_to_none=grads, return_mode="median")
                    t[impl] = (f, fb - f)
                (of, ob), (gf, gb) = t["triton"], t["gr_triton"]
                print(
                    f"{name:>12} pass {p} {order[0]:>9} first: ours fwd {of:.3f} bwd {ob:.3f}, GR fwd {gf:.3f} "
                    f"bwd {gb:.3f} ms; fwd {gf / of:.2f}x bwd {gb / ob:.2f}x",
                    flush=True,
                )


if __name__ == "__main__":
    main()
