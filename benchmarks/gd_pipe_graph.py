"""chunk_fwd.PIPE (the pipelined forward of few long chains) on H16-1seq: eager time, the host time of one call, and
the time of a CUDA-graph replay of the forward (no host launches: what the pipeline's overlap gives on the GPU alone),
per number of pieces; the replay's output bitwise the eager one's.

Session 51 round 6-7 (H200): eager, the pipelined forward was slower at every piece count (P 2: 1.37-1.82 ms, P 4:
2.0-2.3, P 8: 2.1-4.4 against 1.32 unpiped) while its kernels summed as before, with the fast launch path too.

Usage on the GPU machine: ``PYTHONPATH=src python3 benchmarks/gd_pipe_graph.py --pieces off,2,4,8``
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import torch
import triton

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gated_delta_triton as gdt  # noqa: E402

import jagattn  # noqa: E402
from jagattn.gated_delta.triton import chunk_fwd  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pieces", default="off,2,4,8")
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--lengths", default="32768")
    args = ap.parse_args()
    lengths = [int(x) for x in args.lengths.split(",")]
    q, k, v, g, beta, cu = gdt.make(args.heads, lengths)

    def fwd():
        return jagattn.gated_delta_rule(
            q, k, v, g, beta, cu_seqlens=cu, use_qk_l2norm=True, backend="triton"
        )[0]

    ref = None
    with torch.no_grad():
        for pieces in args.pieces.split(",") * 2:
            chunk_fwd.PIPE = pieces
            o = fwd()
            torch.cuda.synchronize()
            eager = triton.testing.do_bench(fwd, warmup=25, rep=200)
            t0 = time.perf_counter()
            for _ in range(20):
                fwd()
            host = (time.perf_counter() - t0) / 20 * 1e3
            torch.cuda.synchronize()
            s = torch.cuda.Stream()
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                for _ in range(2):
                    fwd()
            torch.cuda.current_stream().wait_stream(s)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                out = fwd()
            graph.replay()
            torch.cuda.synchronize()
            same = torch.equal(out, o)
            ref = o if ref is None else ref
            replay = triton.testing.do_bench(graph.replay, warmup=25, rep=200)
            print(
                f"PIPE={pieces:4s} eager {eager:.3f} ms  host/call {host:.3f} ms  graph replay {replay:.3f} ms  "
                f"replay==eager {same}  ==unpiped {torch.equal(o, ref)}",
                flush=True,
            )
            del graph


if __name__ == "__main__":
    main()
