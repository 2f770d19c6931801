"""Host time of the public attention forward with autograd on a suite row (session 14 round 7: the bench's
forward on causal-mean512-hkv4 read 0.58 ms with inputs requiring grad against 0.33 ms under no_grad).

Per call: wall-clock of N back-to-back calls without synchronizing (host-bound if it exceeds the GPU time),
the GPU time (do_bench) with and without grad, and a cProfile of N calls with grad (top entries by own
time and by cumulative time).

Usage on the GPU machine: ``PYTHONPATH=src python3 benchmarks/attention_host_profile.py [--row causal-mean512-hkv4]``.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import time

os.environ.setdefault("JAGATTN_AUTOTUNE", "0")

import torch  # noqa: E402
import triton  # noqa: E402

from jagattn.bench import cases, suites  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--row", default="causal-mean512-hkv4")
    ap.add_argument("-n", type=int, default=200)
    args = ap.parse_args()
    fam = cases.AttentionFamily()
    (row,) = suites.select_rows(["attention"], args.row)
    p = fam.build(row, torch.device("cuda"), torch.bfloat16)
    leaves = p.leaves()

    def run():
        return fam.call(p, leaves, "triton")

    for _ in range(5):
        run()
    torch.cuda.synchronize()
    for grad in (False, True):
        with torch.set_grad_enabled(grad):
            t0 = time.perf_counter()
            for _ in range(args.n):
                run()
            host = (time.perf_counter() - t0) / args.n * 1e6
            torch.cuda.synchronize()
            gpu = triton.testing.do_bench(run, warmup=25, rep=100) * 1e3
        print(f"grad={grad}: host {host:.1f} us/call (no sync), do_bench {gpu:.1f} us", flush=True)
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(args.n):
        run()
    prof.disable()
    torch.cuda.synchronize()
    st = pstats.Stats(prof)
    st.sort_stats("tottime").print_stats(25)
    st.sort_stats("cumulative").print_stats(30)


if __name__ == "__main__":
    main()
