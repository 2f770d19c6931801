"""Host cost of one plain launch with and without ``_core/launch.DIRECT`` (session 52), isolated from the ops.

One trivial Triton kernel (a 1-block copy of 16 elements, so the GPU never holds the host back) is launched through
``jagattn._core.launch.launch`` inside torch's ``set_wrap_triton_enabled(False)`` (the state of a ``triton_op`` body
in eager mode), with ``DIRECT`` on and off, alternated in one process: ``-r`` rounds of ``-n`` launches each, one
synchronize per round; the median microseconds per launch per mode. Also ``kernel[grid](...)`` alone and
``wrap_triton(kernel)[grid](...)`` alone, for scale.

The op-level A/B (``op_overhead.py`` / ``gd_host_time.py`` with ``JAGATTN_DIRECT_LAUNCH`` 1 and 0) could not resolve
a few tens of microseconds per call on the device host: its per-call numbers moved by up to 2x between identical
runs. This measures the one difference directly.

Usage on the GPU machine: ``PYTHONPATH=src python3 benchmarks/direct_launch_cost.py [-n 2000] [-r 7]``
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
import triton
import triton.language as tl
from torch._library.triton import set_wrap_triton_enabled

from jagattn._core import launch as L


@triton.jit
def _copy(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=2000, help="launches per round")
    ap.add_argument("-r", type=int, default=7, help="rounds per mode")
    args = ap.parse_args()
    x = torch.randn(16, device="cuda")
    y = torch.empty_like(x)
    grid = (1,)

    def direct_flag(on):
        def run():
            L.DIRECT = on
            for _ in range(args.n):
                L.launch(_copy, grid, x, y, 16, BLOCK=16)

        return run

    def bare():
        for _ in range(args.n):
            _copy[grid](x, y, 16, BLOCK=16)

    def wrapped():
        for _ in range(args.n):
            torch.library.wrap_triton(_copy)[grid](x, y, 16, BLOCK=16)

    modes = {
        "launch DIRECT=on": direct_flag(True),
        "launch DIRECT=off": direct_flag(False),
        "kernel[grid]": bare,
        "wrap_triton(kernel)[grid]": wrapped,
    }
    times = {m: [] for m in modes}
    saved = L.DIRECT
    try:
        with set_wrap_triton_enabled(False):
            for fn in modes.values():  # warm-up: compile, caches
                fn()
            torch.cuda.synchronize()
            for _ in range(args.r):
                for m, fn in modes.items():
                    t0 = time.perf_counter()
                    fn()
                    torch.cuda.synchronize()
                    times[m].append((time.perf_counter() - t0) / args.n * 1e6)
    finally:
        L.DIRECT = saved
    torch.testing.assert_close(y, x)
    print(f"torch {torch.__version__} triton {triton.__version__} | {args.r} rounds x {args.n} launches")
    for m, ts in times.items():
        print(
            f"{m:28s} median {statistics.median(ts):6.2f} us/launch  (min {min(ts):6.2f}, max {max(ts):6.2f})"
        )


if __name__ == "__main__":
    main()
