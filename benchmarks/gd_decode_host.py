"""Host time of a gated delta decoding step (issue #6, session 44): the public call on a batch of one-token sequences
with an initial state (the token-loop kernel), as do_bench median, summed kernel time and host time per call with
the GPU kept busy (``host_vs_kernel.py``'s measures). Run it with ``JAGATTN_LAUNCH_REPLAY=0`` and ``=1`` to price the
launch replay of ``ops.gated_delta_fwd_recurrent``.

Usage on the GPU machine: ``JAGATTN_LAUNCH_REPLAY=1 PYTHONPATH=src python3 benchmarks/gd_decode_host.py
[--seqs 64,256] [--heads 16] [--value-heads 32] [--gk]``
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("JAGATTN_AUTOTUNE", "0")

import torch  # noqa: E402
from host_vs_kernel import _host, _kernel_sum  # noqa: E402  (benchmarks/, the script's folder)
from triton.testing import do_bench  # noqa: E402

import jagattn  # noqa: E402
from jagattn.testing import cu_seqlens  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seqs", default="64,256")
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--value-heads", type=int, default=32)
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--gk", action="store_true")
    ap.add_argument("-n", type=int, default=40)
    args = ap.parse_args()
    dev, bf = "cuda", torch.bfloat16
    h, hv, d = args.heads, args.value_heads, args.dim
    for n in (int(x) for x in args.seqs.split(",")):
        cu = cu_seqlens([1] * n, dev)
        q = torch.randn(n, h, d, device=dev, dtype=bf)
        k = torch.randn(n, h, d, device=dev, dtype=bf)
        v = torch.randn(n, hv, d, device=dev, dtype=bf)
        g = -torch.rand(n, hv, device=dev)
        beta = torch.rand(n, hv, device=dev).to(bf)
        gk = -torch.rand(n, hv, d, device=dev) * 0.1 if args.gk else None
        h0 = torch.randn(n, hv, d, d, device=dev) * 0.1

        def step(q=q, k=k, v=v, g=g, beta=beta, gk=gk, h0=h0, cu=cu):
            return jagattn.gated_delta_rule(
                q, k, v, g, beta, cu_seqlens=cu, initial_state=h0, output_final_state=True, use_qk_l2norm=True,
                gk=gk, backend="triton",
            )  # fmt: skip

        with torch.no_grad():
            for _ in range(3):
                step()
            torch.cuda.synchronize()
            bench = do_bench(step, warmup=25, rep=200, return_mode="median")
            kern = _kernel_sum(step, [])
            host = _host(step, [], args.n)
        print(
            f"decode N={n} H={h} HV={hv} D={d} gk={args.gk} replay={os.environ.get('JAGATTN_LAUNCH_REPLAY', 'default')}: "
            f"bench {bench:.4f} ms, kernels {kern:.4f} ms, host {host:.4f} ms per call",
            flush=True,
        )


if __name__ == "__main__":
    main()
