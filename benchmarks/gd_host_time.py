"""Host time per call of the gated delta rule's public function (backend="triton") on the BENCHMARKS.md rows, against
its GPU time: is a row host-bound in eager use?

Per row: the forward (no grad) and forward+backward as ``do_bench`` medians (GPU-bound unless the host is slower), and
the host time of one call (``time.perf_counter`` over 20 calls without a sync: the launches are asynchronous, so this
is what the host spends per call while the GPU catches up). Then a ``cProfile`` of 10 forward+backward calls of the
first row: the 25 functions with the most cumulative host time.

Session 51 (H200): the pipelined forward's round 8 measured 0.66-1.0 ms of host time per H16-1seq forward against
1.31 ms of GPU time.

Usage on the GPU machine: ``PYTHONPATH=src python3 benchmarks/gd_host_time.py [--rows H16-8seqs,H16-1seq]``
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys
import time

import torch
import triton

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gated_delta_triton as gdt  # noqa: E402

import jagattn  # noqa: E402


def _host_ms(fn, calls: int = 20) -> float:
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    host = (time.perf_counter() - t0) / calls * 1e3
    torch.cuda.synchronize()
    return host


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", default="H16-8seqs,H16-1seq,H16-ragged,H16-64seqs,H32-8seqs")
    args = ap.parse_args()
    rows = {name: (h, kind) for name, h, kind in gdt.ROWS}
    first = None
    for name in args.rows.split(","):
        h, kind = rows[name]
        lengths = gdt.lengths_for(kind)
        q, k, v, g, beta, cu = gdt.make(h, lengths)
        leaves = [x.requires_grad_(True) for x in (q, k, v, g, beta)]
        do = torch.randn_like(v)

        def fwd(leaves=leaves, cu=cu):
            return jagattn.gated_delta_rule(*leaves, cu_seqlens=cu, use_qk_l2norm=True, backend="triton")[0]

        def fwd_nograd(fwd=fwd):
            with torch.no_grad():
                return fwd()

        def fwdbwd(fwd=fwd, leaves=leaves, do=do):
            torch.autograd.grad(fwd(), leaves, do)

        for f in (fwd_nograd, fwdbwd):
            f()
        gpu_f = triton.testing.do_bench(fwd_nograd, warmup=25, rep=200)
        gpu_fb = triton.testing.do_bench(fwdbwd, warmup=25, rep=200)
        host_f, host_fb = _host_ms(fwd_nograd), _host_ms(fwdbwd)
        print(
            f"{name:11s} fwd: do_bench {gpu_f:.3f} ms host/call {host_f:.3f} ms | fwd+bwd: do_bench {gpu_fb:.3f} ms "
            f"host/call {host_fb:.3f} ms",
            flush=True,
        )
        first = first or fwdbwd
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(10):
        first()
    torch.cuda.synchronize()
    prof.disable()
    pstats.Stats(prof).sort_stats("cumulative").print_stats(25)


if __name__ == "__main__":
    main()
