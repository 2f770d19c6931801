"""Where a gated delta gradient's largest errors sit: per-position errors of the Triton backend and of
the reference run in the input dtype, against the fp32 reference, on one production-size case.

Session 10: ``tests/test_gated_delta_triton.py::test_gpu_production_bf16[32k-single]`` (one 32768-token
sequence, H = HV = 1, K = V = 128, l2norm, initial state) failed dg max-abs 4.2x the reference run's
error on the bf16 precise path (``JAGATTN_GD_BF16_PRECISE=on``) while its RMS matched; the speed path
passes. This prints, for each output named in ``--outputs``, the max-abs / RMS errors and the
``--top`` positions of the largest backend error (token, chunk, row in the chunk, gold value, backend
and reference-run errors there), and the max error per chunk row (are the outliers at a chunk's start
or end?). Run it once per path (the environment picks the path):

    JAGATTN_GD_BF16_PRECISE=on  PYTHONPATH=src python3 benchmarks/gated_delta_dg_outliers.py
    JAGATTN_GD_BF16_PRECISE=off PYTHONPATH=src python3 benchmarks/gated_delta_dg_outliers.py
"""

from __future__ import annotations

import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
from test_gated_delta_triton import make_case, run_reference, run_triton  # noqa: E402

BT = 64


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lengths", default="32768")
    ap.add_argument("--h", type=int, default=1)
    ap.add_argument("--hv", type=int, default=1)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--outputs", default="dg,dbeta,dq,dk")
    ap.add_argument("--top", type=int, default=8)
    args = ap.parse_args()
    lengths = [int(x) for x in args.lengths.split(",")]
    case = make_case(
        lengths, args.h, args.hv, 128, 128, dtype=torch.bfloat16, with_init=True, l2=True, seed=args.seed,
        device="cuda",
    )  # fmt: skip
    got = run_triton(case)
    gold = run_reference(case, cast=torch.float32)
    low = run_reference(case, cast=torch.bfloat16, compute_dtype=torch.bfloat16)
    starts = torch.tensor([0] + lengths[:-1]).cumsum(0).tolist()
    row_in_chunk = torch.cat([torch.arange(n) % BT for n in lengths]).cuda()
    print(f"lengths={lengths} h={args.h} hv={args.hv} seed={args.seed} "
          f"PRECISE={os.environ.get('JAGATTN_GD_BF16_PRECISE', 'auto')}")  # fmt: skip
    for name in args.outputs.split(","):
        g = gold[name].double()
        e_got = (got[name].double() - g).abs()
        e_low = (low[name].double() - g).abs()
        print(
            f"{name}: backend max {e_got.max():.3e} rms {e_got.pow(2).mean().sqrt():.3e} | reference run "
            f"max {e_low.max():.3e} rms {e_low.pow(2).mean().sqrt():.3e} | gold rms {g.pow(2).mean().sqrt():.3e}"
        )
        flat = e_got.reshape(e_got.shape[0], -1).amax(1)  # per token
        top = flat.topk(min(args.top, flat.numel()))
        for val, tok in zip(top.values.tolist(), top.indices.tolist(), strict=True):
            seq = max(i for i, s in enumerate(starts) if s <= tok)
            pos = tok - starts[seq]
            print(
                f"  token {tok} (seq {seq} pos {pos}, chunk {pos // BT} row {pos % BT}): backend err {val:.3e}"
                f"  ref-run err {e_low.reshape(e_low.shape[0], -1)[tok].max():.3e}"
                f"  |gold| {g.reshape(g.shape[0], -1)[tok].abs().max():.3e}"
            )
        by_row = torch.zeros(BT, dtype=torch.float64, device=flat.device).scatter_reduce(
            0, row_in_chunk, flat, "amax"
        )
        print("  max backend err by row in chunk:", " ".join(f"{x:.1e}" for x in by_row.tolist()))


if __name__ == "__main__":
    main()
