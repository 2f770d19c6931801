"""Which forward tile does the public attention call launch, and how fast is each tile class, on suite rows?

Per row (built as ``jagattn bench`` builds it, bf16, ``JAGATTN_AUTOTUNE=0``): for the schedule's own choice
and each override of ``fwd.FWD_TILE_OVERRIDE`` (long / short / wide; autotuner caches cleared between),
the config the autotuner launched (``best_config``), and do_bench medians of the forward with inputs that
require grad (as the bench times it) and under ``no_grad``. Session 14 round 6: the bench of round 5 did
not show the wide tile's gain measured by ``src_variant_ab.py`` in rounds 3-4.

Usage on the GPU machine: ``PYTHONPATH=src python3 benchmarks/attention_fwd_tile_diag.py [--rows a,b]``.
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("JAGATTN_AUTOTUNE", "0")

import torch  # noqa: E402
import triton  # noqa: E402

from jagattn.attention.triton import fwd  # noqa: E402
from jagattn.bench import cases, suites  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument(
        "--rows", default="causal-mean512-hkv4,causal-mean8192-hkv16,causal-mean2048-hkv16,skewed"
    )
    ap.add_argument(
        "--tiles", default="none,long,short,wide", help="tile overrides to run (none = the schedule's)"
    )
    ap.add_argument("--head-fast", default="none", help="comma list of grid-order overrides: none, 0, 1")
    args = ap.parse_args()
    fam = cases.AttentionFamily()
    for row in suites.select_rows(["attention"], args.rows):
        p = fam.build(row, torch.device("cuda"), torch.bfloat16)
        leaves = p.leaves()
        print(f"row {row.name}: {fam.describe(p)}", flush=True)
        combos = [
            (None if t == "none" else t, None if h == "none" else h)
            for t in args.tiles.split(",")
            for h in args.head_fast.split(",")
        ]
        for tile, head_fast in combos:
            fwd.FWD_TILE_OVERRIDE = tile
            fwd.FWD_HEAD_FAST_OVERRIDE = head_fast
            fwd._attention_fwd_kernel.cache.clear()
            fam.call(p, leaves, "triton")
            torch.cuda.synchronize()
            cfg = fwd._attention_fwd_kernel.best_config

            def run(p=p, leaves=leaves):
                return fam.call(p, leaves, "triton")

            t_grad = triton.testing.do_bench(run, warmup=25, rep=100)
            with torch.no_grad():
                t_ng = triton.testing.do_bench(run, warmup=25, rep=100)
            print(
                f"  {str(tile):6} head_fast={head_fast!s:4} launched {cfg}  fwd(grad) {t_grad:.3f} ms  fwd(no_grad) {t_ng:.3f} ms",
                flush=True,
            )
        fwd.FWD_TILE_OVERRIDE = None
        fwd.FWD_HEAD_FAST_OVERRIDE = None


if __name__ == "__main__":
    main()
