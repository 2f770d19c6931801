"""Session 35 A/B (issue #6): the output kernel's programs inside the forward's state pass launch
(``chunk_fwd.OVERLAP_O``) against the separate output launch, same process, alternated.

Per row: the public forward without gradients, the forward that keeps T for a backward, and forward + backward,
with ``OVERLAP_O`` "off" and "on" in turns (3 passes); o, the final state and every gradient compared bitwise
between the two; the per-kernel profile of both forwards; and the PTX of every compiled state-pass kernel checked
for a CTA barrier right before each ``red.release`` (what makes the release cover every thread's stores).

Runs against commit 93c2509 only (``OVERLAP_O`` was reverted after round 3).

Usage (GPU): ``PYTHONPATH=src python3 benchmarks/rounds/s35_overlap_ab.py --out $OUT [--rows H16-1seq,...]``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys

import torch
import triton

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import gated_delta_triton as gdt  # noqa: E402

import jagattn  # noqa: E402
from jagattn.gated_delta.triton import chunk_fwd as tf  # noqa: E402

# "on-nowait": the output programs skip the wait (o wrong; what sharing the SMs costs the chains), "on-noo": no
# output programs (what the per-chunk counts cost the chains)
MODES = ["off", "on", "on-nowait", "on-noo"]
EXTRA_ROWS = {"H16-2seqs": (16, "equal:2"), "H8-1seq": (8, "equal:1"), "H32-1seq": (32, "equal:1")}


def bench(fn) -> float:
    return triton.testing.do_bench(fn, warmup=10, rep=100, return_mode="median")


def row(name: str, h: int, kind: str, passes: int) -> dict:
    q, k, v, g, beta, cu = gdt.make(h, gdt.lengths_for(kind))
    leaves = [t.detach().requires_grad_(True) for t in (q, k, v, g, beta)]
    do = torch.randn_like(v)

    def fwd_nograd():
        with torch.no_grad():
            return jagattn.gated_delta_rule(
                q, k, v, g, beta, cu_seqlens=cu, use_qk_l2norm=True, backend="triton"
            )

    def fwd():
        return jagattn.gated_delta_rule(*leaves, cu_seqlens=cu, use_qk_l2norm=True, backend="triton")[0]

    def fwd_bwd():
        return torch.autograd.grad(fwd(), leaves, do)

    res: dict = {"ms": {}, "kernels": {}}
    outs = {}
    for mode in ("off", "on"):
        tf.OVERLAP_O = mode
        o_ng = fwd_nograd()[0]
        grads = fwd_bwd()
        outs[mode] = [o_ng, fwd().detach(), *grads]
        res["kernels"][mode] = gdt.kernel_times(fwd)
    res["bitwise"] = [bool(torch.equal(a, b)) for a, b in zip(outs["off"], outs["on"], strict=True)]
    # a race would show as a run that differs: 30 more overlapped forwards against the separate launch's o
    tf.OVERLAP_O = "on"
    res["repeat_equal"] = sum(bool(torch.equal(fwd_nograd()[0], outs["off"][0])) for _ in range(30))
    for _ in range(passes):
        for mode in MODES:
            tf.OVERLAP_O, tf._OVX = mode.split("-")[0], (mode.split("-") + [""])[1]
            for label, fn in (("fwd_nograd", fwd_nograd), ("fwd", fwd), ("fwd_bwd", fwd_bwd)):
                if label == "fwd_nograd" or "-" not in mode:
                    res["ms"].setdefault(f"{label} {mode}", []).append(bench(fn))
    for mode in MODES[2:]:
        tf.OVERLAP_O, tf._OVX = mode.split("-")
        res["kernels"][mode] = gdt.kernel_times(fwd_nograd)
    tf.OVERLAP_O, tf._OVX = "off", ""
    print(f"{name}: bitwise (o no-grad, o, dq, dk, dv, dg, dbeta) {res['bitwise']}, repeats equal "
          f"{res['repeat_equal']}/30")  # fmt: skip
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


def ptx_check() -> list[str]:
    """Each compiled ``_gated_delta_fwd_h_kernel`` with OVERLAP_O: is every ``red``/``atom`` with release semantics
    preceded (within the 3 previous instructions) by ``bar.sync``?"""
    out = []
    caches = getattr(tf._gated_delta_fwd_h_kernel, "device_caches", {})
    for dev_cache in caches.values():
        kernels = dev_cache[0] if isinstance(dev_cache, tuple) else dev_cache
        for ck in kernels.values():
            ptx = ck.asm.get("ptx", "")
            if "release" not in ptx:
                continue
            lines = [
                ln.strip()
                for ln in ptx.splitlines()
                if ln.strip() and not ln.strip().startswith(("//", ".loc"))
            ]
            out.append(f"kernel with {ptx.count('cp.async.cg') + ptx.count('cp.async.ca')} cp.async lines")
            for i, ln in enumerate(lines):
                if re.search(r"(red|atom)\.[\w.]*release", ln):
                    before = lines[max(0, i - 3) : i + 1]
                    out.append(
                        f"{'OK ' if any('bar.sync' in b for b in before) else 'NO BARRIER '}{ln} <- {before}"
                    )
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=".")
    ap.add_argument("--rows", default="H16-1seq,H16-2seqs,H32-1seq")
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
        with open(os.path.join(args.out, "s35_overlap_ab.json"), "w") as fh:
            json.dump(result, fh, indent=1)
    result["ptx_check"] = ptx_check()
    print(
        "ptx check:\n  "
        + "\n  ".join(result["ptx_check"] or ["no release atomics found in the compiled kernels"])
    )
    with open(os.path.join(args.out, "s35_overlap_ab.json"), "w") as fh:
        json.dump(result, fh, indent=1)


if __name__ == "__main__":
    main()
