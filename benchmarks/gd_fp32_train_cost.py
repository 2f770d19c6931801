"""fp32 training of the gated delta rule: the token loop in Triton (``JAGATTN_GD_FP32_TRAIN=recurrent``) against the
reference the ``auto`` backend runs otherwise, and the chunked fp32 kernels for scale (session 52).

Per row (fp32, l2norm, an initial state, K = V = 128 unless given): forward + backward ms of
``jagattn.gated_delta_rule(..., backend=...)`` as a do_bench median for "triton" with the opt-in on, the chunked fp32
ops called directly (``ops.gated_delta_fwd``: the path the backend refuses for fp32 training, kept for scale), and
the reference (one timed call; only up to ``--ref-max-tokens``), plus the peak memory of one call. The gradients of
the triton route are checked against the fp32 reference's on the first row (max abs error over max abs).

Usage on the GPU machine: ``PYTHONPATH=src python3 benchmarks/gd_fp32_train_cost.py [--rows 16:8x4096,16:1x32768]``
"""

from __future__ import annotations

import argparse
import time

import torch
import triton

import jagattn
from jagattn.gated_delta import backends, ops


def make(h, n, length, dk, dv, seed=0):
    gen = torch.Generator(device="cuda").manual_seed(seed)
    t = n * length

    def r(*shape):
        return torch.randn(*shape, device="cuda", generator=gen)

    leaves = [r(t, h, dk), r(t, h, dk), r(t, h, dv), -torch.rand(t, h, device="cuda", generator=gen) * 0.1,
              torch.rand(t, h, device="cuda", generator=gen), r(n, h, dk, dv)]  # fmt: skip
    for x in leaves:
        x.requires_grad_(True)
    cu = torch.arange(0, t + 1, length, device="cuda", dtype=torch.int32)
    return leaves, cu


def run_row(first: bool, h: int, n: int, length: int, args) -> str:
    leaves, cu = make(h, n, length, args.dk, args.dv)
    q, k, v, g, beta, h0 = leaves

    def public(backend):
        o, fs = jagattn.gated_delta_rule(
            q, k, v, g, beta, cu_seqlens=cu, initial_state=h0, output_final_state=True, use_qk_l2norm=True,
            backend=backend,
        )  # fmt: skip
        return torch.autograd.grad(o.sum() + fs.sum(), leaves)

    def chunked():
        o, fs = ops.gated_delta_fwd(q, k, v, g, beta, h0, cu, args.dk**-0.5, True)
        return torch.autograd.grad(o.sum() + fs.sum(), leaves)

    out = [f"H{h} {n}x{length}"]
    routes = [("triton", lambda: public("triton"))] + ([("chunked-fp32", chunked)] if args.chunked else [])
    for name, fn in routes:
        fn()
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        fn()
        peak = torch.cuda.max_memory_allocated() / 2**20
        ms = triton.testing.do_bench(fn, warmup=5, rep=50)
        out.append(f"{name} {ms:.2f} ms peak {peak:.0f} MiB")
    if n * length <= args.ref_max_tokens:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        t0 = time.perf_counter()
        ref = public("reference")
        torch.cuda.synchronize()
        peak = torch.cuda.max_memory_allocated() / 2**20
        out.append(f"reference {1e3 * (time.perf_counter() - t0):.0f} ms (one call) peak {peak:.0f} MiB")
        if first:
            got = public("triton")
            errs = [((a - b).abs().max() / b.abs().max()).item() for a, b in zip(got, ref, strict=True)]
            out.append("grad err/max " + " ".join(f"{e:.1e}" for e in errs))
    return " | ".join(out)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", default="4:2x1024,16:8x4096,16:1x32768,16:64x512", help="H:NxL,...")
    ap.add_argument("--dk", type=int, default=128)
    ap.add_argument("--dv", type=int, default=128)
    ap.add_argument("--ref-max-tokens", type=int, default=2048)
    ap.add_argument("--no-chunked", dest="chunked", action="store_false", help="time only the token loop")
    args = ap.parse_args()
    backends.FP32_TRAIN = "recurrent"
    for i, row in enumerate(args.rows.split(",")):
        h, nl = row.split(":")
        n, length = (int(x) for x in nl.split("x"))
        print(run_row(i == 0, int(h), n, length, args), flush=True)


if __name__ == "__main__":
    main()
