"""What session 35's fp32 inference route (``gated_delta.backends.FP32_RECURRENT``: fp32 without gradients
runs the token-loop kernel at any length) costs against the chunked fp32 forward, on the BENCHMARKS.md rows
(32768 tokens, K = V = 128, l2norm) and shorter single sequences, same process, alternated.

Per row: forward time (``triton.testing.do_bench`` median) with the switch on and off, the bf16 chunked
forward for scale, and ``max |o_on - o_off| / max |o_off|``.

    PYTHONPATH=src python3 benchmarks/fp32_recurrent_cost.py [--rows ...] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import torch
import triton

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gated_delta_triton as gdt  # noqa: E402

import jagattn  # noqa: E402
from jagattn.gated_delta import backends  # noqa: E402

EXTRA_ROWS = [
    ("H16-1seq-4k", 16, "tokens:4096:1"),
    ("H16-1seq-1k", 16, "tokens:1024:1"),
]


def _forward(q, k, v, g, beta, cu):
    return jagattn.gated_delta_rule(q, k, v, g, beta, cu_seqlens=cu, use_qk_l2norm=True, backend="triton")[0]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", default="H16-8seqs,H16-64seqs,H16-1seq,H16-ragged,H16-1seq-4k,H16-1seq-1k")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    args = ap.parse_args()
    rows = {name: (h, kind) for name, h, kind in gdt.ROWS + EXTRA_ROWS}
    results = []
    with torch.no_grad():
        for name in args.rows.split(","):
            h, kind = rows[name]
            q, k, v, g, beta, cu = gdt.make(h, gdt.lengths_for(kind))
            q32, k32, v32, b32 = (x.float() for x in (q, k, v, beta))
            times = {"recurrent": [], "chunked": [], "bf16_chunked": []}
            outs = {}
            for _ in range(args.repeats):
                for label, on in (("recurrent", True), ("chunked", False)):
                    backends.FP32_RECURRENT = on
                    outs[label] = _forward(q32, k32, v32, g, b32, cu)
                    times[label].append(triton.testing.do_bench(lambda: _forward(q32, k32, v32, g, b32, cu)))
                backends.FP32_RECURRENT = True
                times["bf16_chunked"].append(triton.testing.do_bench(lambda: _forward(q, k, v, g, beta, cu)))
            diff = ((outs["recurrent"] - outs["chunked"]).abs().max() / outs["chunked"].abs().max()).item()
            row = {"row": name, **{f"{k}_ms": min(t) for k, t in times.items()}, "rel_diff": diff}
            row["recurrent_over_chunked"] = row["recurrent_ms"] / row["chunked_ms"]
            results.append(row)
            print(
                f"{name:14s} fp32 recurrent {row['recurrent_ms']:8.3f} ms  fp32 chunked {row['chunked_ms']:8.3f} ms"
                f"  (x{row['recurrent_over_chunked']:.2f})  bf16 chunked {row['bf16_chunked_ms']:7.3f} ms"
                f"  rel diff {diff:.2e}",
                flush=True,
            )
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "fp32_recurrent_cost.json"), "w") as f:
        json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                   "triton": triton.__version__, "rows": results}, f, indent=1)


if __name__ == "__main__":
    main()
