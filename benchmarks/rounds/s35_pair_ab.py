"""Session 35 A/B (issue #6): the forward's state pass two chunks a step (``chunk_fwd.PAIR``) against one, same
process, alternated.

Per row: the public forward without gradients, with gradients (keeps T), and forward + backward, with ``PAIR``
"off" and "on" in turns; the largest difference of o, the final state and every gradient between the two, relative
to the output's max (the pair form rounds W and U~ otherwise: not bitwise); and the per-kernel profile of both
forwards. The SPEC-rule check is the gated delta gpu tests with ``JAGATTN_GD_PAIR=on`` (the round script).

Runs against commit a0cd371 only (``PAIR`` was reverted after round 5).

Usage (GPU): ``PYTHONPATH=src python3 benchmarks/rounds/s35_pair_ab.py --out $OUT [--rows H16-1seq,...]``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import torch
import triton

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import gated_delta_triton as gdt  # noqa: E402

import jagattn  # noqa: E402
from jagattn.gated_delta.triton import chunk_fwd as tf  # noqa: E402

MODES = ["off", "on"]
EXTRA_ROWS = {"H16-2seqs": (16, "equal:2"), "H16-4seqs": (16, "equal:4"), "H32-1seq": (32, "equal:1")}
NAMES = ("o (no grad)", "final state", "o", "dq", "dk", "dv", "dg", "dbeta")


def bench(fn) -> float:
    return triton.testing.do_bench(fn, warmup=10, rep=100, return_mode="median")


def row(name: str, h: int, kind: str, passes: int) -> dict:
    q, k, v, g, beta, cu = gdt.make(h, gdt.lengths_for(kind))
    leaves = [t.detach().requires_grad_(True) for t in (q, k, v, g, beta)]
    do = torch.randn_like(v)

    def fwd_nograd():
        with torch.no_grad():
            return jagattn.gated_delta_rule(
                q, k, v, g, beta, cu_seqlens=cu, use_qk_l2norm=True, output_final_state=True, backend="triton"
            )

    def fwd():
        return jagattn.gated_delta_rule(*leaves, cu_seqlens=cu, use_qk_l2norm=True, backend="triton")[0]

    def fwd_bwd():
        return torch.autograd.grad(fwd(), leaves, do)

    res: dict = {"ms": {}, "kernels": {}}
    outs = {}
    for mode in MODES:
        tf.PAIR = mode
        o_ng, fs = fwd_nograd()
        outs[mode] = [o_ng, fs, fwd().detach(), *fwd_bwd()]
        res["kernels"][mode] = gdt.kernel_times(fwd_nograd)
    res["rel_diff"] = {
        n: float((a.float() - b.float()).abs().max() / b.float().abs().max().clamp_min(1e-30))
        for n, a, b in zip(NAMES, outs["on"], outs["off"], strict=True)
    }
    for _ in range(passes):
        for mode in MODES:
            tf.PAIR = mode
            for label, fn in (("fwd_nograd", fwd_nograd), ("fwd", fwd), ("fwd_bwd", fwd_bwd)):
                res["ms"].setdefault(f"{label} {mode}", []).append(bench(fn))
    tf.PAIR = "off"
    print(
        f"{name}: max |on - off| / max |off|: "
        + ", ".join(f"{n} {x:.1e}" for n, x in res["rel_diff"].items())
    )
    for key, vals in res["ms"].items():
        print(
            f"  {key}: "
            + " ".join(f"{x:.4f}" for x in vals)
            + f"  (median {sorted(vals)[len(vals) // 2]:.4f})"
        )
    for mode in MODES:
        top = sorted(res["kernels"][mode].items(), key=lambda x: -x[1])[:6]
        print(f"  kernels {mode}: " + "; ".join(f"{n[:40]} {ms:.4f}" for n, ms in top))
    return res


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=".")
    ap.add_argument("--rows", default="H16-1seq,H16-2seqs,H16-4seqs,H32-1seq")
    ap.add_argument("--passes", type=int, default=3)
    args = ap.parse_args()
    rows = {r[0]: (r[1], r[2]) for r in gdt.ROWS} | EXTRA_ROWS
    result = {
        "provenance": {
            "torch": torch.__version__,
            "triton": triton.__version__,
            "device": torch.cuda.get_device_name(),
            "sha": os.environ.get("JAGATTN_GIT_SHA"),
        },
        "rows": {},
    }
    for name in args.rows.split(","):
        h, kind = rows[name]
        result["rows"][name] = row(name, h, kind, args.passes)
        with open(os.path.join(args.out, "s35_pair_ab.json"), "w") as fh:
            json.dump(result, fh, indent=1)


if __name__ == "__main__":
    main()
