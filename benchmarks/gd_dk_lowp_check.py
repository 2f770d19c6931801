"""SPEC-rule margins of a chunk_bwd precision switch (``--attr``: DK_LOWP, the default, DH_F16 or OVERLAP) on the bf16
l2norm HV == H path, over gate strengths, key dims and initial states. DK_LOWP "off" / "l2n" / "f16": dk between
dqkwg and wy in fp32, bf16 or scaled fp16; DH_F16 "off" / "on": the per-chunk dS in fp32 or scaled fp16; OVERLAP
"off" / "on": the gate sums from fp32 states in the recompute, or in dqkwg from scaled-fp16 states (``--heads 40``:
the speed path, where the states are 16-bit; session 49's first DH_F16 run at 4 heads measured the precise path).

Per case: the fp32 and bf16 reference runs once, the Triton backend with each value; prints, per output, the error
over the rule's allowance (``2 x bf16 reference error + floor``; <= 1 passes) for max-abs and rms.
Usage on the GPU: ``PYTHONPATH=src python3 benchmarks/gd_dk_lowp_check.py [--budget S]``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
from jagattn import testing  # noqa: E402
from jagattn.gated_delta.triton import chunk_bwd  # noqa: E402
from test_gated_delta_triton import make_case, run_reference, run_triton  # noqa: E402


def ratios(got, gold, lowp):
    out = {}
    for name in gold:
        e, r = testing.errors(got[name], gold[name]), testing.errors(lowp[name], gold[name])
        floor = 1e-5 * testing.rms(gold[name])
        out[name] = (e.max_abs / (2 * r.max_abs + floor), e.rms / (2 * r.rms + floor))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--budget", type=float, default=240.0)
    ap.add_argument("--values", default="off,l2n", help="values of the switch, comma-separated")
    ap.add_argument("--attr", default="DK_LOWP", help="the chunk_bwd switch (DK_LOWP, DH_F16, OVERLAP)")
    ap.add_argument(
        "--heads",
        type=int,
        default=4,
        help="H = HV; past 32 the 2048 tokens leave the bf16 precise path (65536 token-heads) for the speed path, "
        "the only one where DH_F16 and OVERLAP's fp16 states apply",
    )
    ap.add_argument(
        "--lengths", default="700,1348", help="sequence lengths, e.g. 700,1,1347 (a 1-token sequence)"
    )
    args = ap.parse_args()
    t0 = time.time()
    cases = [(dk, g_shift, init, seed) for seed in (1, 2) for g_shift in (0.0, 6.0, 1.0, 3.0) for dk in (128, 64)
             for init in (True,)]  # fmt: skip
    values = args.values.split(",")
    worst = dict.fromkeys(values, 0.0)
    for dk, g_shift, init, seed in cases:
        if time.time() - t0 > args.budget:
            print("budget reached")
            break
        lengths = [int(x) for x in args.lengths.split(",")]
        case = make_case(lengths, args.heads, args.heads, dk, 128, dtype=torch.bfloat16, with_init=init, l2=True,
                         seed=seed, device="cuda", g_shift=g_shift)  # fmt: skip
        gold = run_reference(case, cast=torch.float32)
        lowp = run_reference(case, cast=torch.bfloat16, compute_dtype=torch.bfloat16)
        line = []
        for value in values:
            setattr(chunk_bwd, args.attr, value)
            r = ratios(run_triton(case), gold, lowp)
            m = max(max(v) for v in r.values())
            worst[value] = max(worst[value], m)
            at = max(r, key=lambda n, r=r: max(r[n]))
            line.append(
                f"{value}: dk {r['dk'][0]:.2f}/{r['dk'][1]:.2f} dg {r['dg'][0]:.2f}/{r['dg'][1]:.2f} worst {m:.2f} ({at})"
            )
        print(f"K={dk} g_shift={g_shift} init={init} seed={seed}  " + "  ".join(line), flush=True)
    print("worst ratio over outputs and cases:", worst, f"({time.time() - t0:.0f} s)")


if __name__ == "__main__":
    main()
