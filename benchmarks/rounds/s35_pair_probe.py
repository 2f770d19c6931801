"""Session 35 probe (issue #6): what would a state pass that steps two chunks at a time save on the few-chain rows?

The forward's unfused state pass (``chunk_fwd._gated_delta_fwd_h_kernel``, H16-1seq: 16 chains, V blocks of 16) is a
latency-bound chain of 512 steps of ~1 us. Two chunks folded into one 128-row step (``W' = [W1; e1 W2 - M W1]``,
``U' = [U1; U2 - M U1]`` with ``M = W2 K1~^T``, computed chunk-parallel beforehand) would make it 256 steps of two
products each. This probe times the existing kernel with ``BT = 128`` (the step's shapes; the values are not the
pair's, the outputs are discarded) against ``BT = 64`` on the same buffers, for several launch configs, plus the
per-kernel profile of the public forward on the rows.

Usage (GPU): ``PYTHONPATH=src python3 benchmarks/rounds/s35_pair_probe.py --out $OUT``.
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
from jagattn.gated_delta.triton import common  # noqa: E402
from jagattn.gated_delta.triton.l2norm import l2norm_fwd  # noqa: E402

CFGS = [(16, 4, 3), (16, 4, 2), (16, 8, 2), (16, 8, 3), (32, 4, 2), (32, 8, 2)]


def bench(fn) -> float:
    return triton.testing.do_bench(fn, warmup=10, rep=80, return_mode="median")


def probe(name: str, h: int, kind: str) -> dict:
    q, k, v, g, beta, cu = gdt.make(h, gdt.lengths_for(kind))
    kn = l2norm_fwd(k)
    gc, _ainv, w, u = tf._prepare(kn, v, g, beta, cu)
    res: dict = {"state_pass": {}}
    for bt in (64, 128):
        for cfg in CFGS:
            common.CONFIG_OVERRIDE.clear()
            common.CONFIG_OVERRIDE["fwd_h"] = cfg
            tf.BT = bt
            try:

                def run():
                    return tf._state_pass(kn, w, u, gc, None, cu, in_dtype=v.dtype, store_final=True)

                run()
                ms = bench(run)
                res["state_pass"][f"BT{bt} {cfg}"] = ms
                print(f"{name} state pass BT={bt} cfg={cfg}: {ms:.4f} ms", flush=True)
            except Exception as exc:
                res["state_pass"][f"BT{bt} {cfg}"] = f"{type(exc).__name__}: {str(exc)[:160]}"
                print(
                    f"{name} state pass BT={bt} cfg={cfg}: {type(exc).__name__} {str(exc)[:160]}", flush=True
                )
            finally:
                tf.BT = 64
                common.CONFIG_OVERRIDE.clear()
    leaves = [t.detach().requires_grad_(True) for t in (q, k, v, g, beta)]

    def fwd():
        return jagattn.gated_delta_rule(*leaves, cu_seqlens=cu, use_qk_l2norm=True, backend="triton")[0]

    res["fwd_ms"] = bench(fwd)
    res["fwd_kernels"] = gdt.kernel_times(fwd)
    print(f"{name} public forward {res['fwd_ms']:.4f} ms; kernels:", flush=True)
    for kname, ms in sorted(res["fwd_kernels"].items(), key=lambda x: -x[1]):
        print(f"    {ms:.4f}  {kname}")
    return res


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=".")
    ap.add_argument("--rows", default="H16-1seq,H16-ragged")
    args = ap.parse_args()
    rows = {r[0]: r for r in gdt.ROWS}
    out = {
        "provenance": {
            "torch": torch.__version__,
            "triton": triton.__version__,
            "device": torch.cuda.get_device_name(),
            "sha": os.environ.get("JAGATTN_GIT_SHA"),
        },
        "rows": {},
    }
    for name in args.rows.split(","):
        _, h, kind = rows[name]
        out["rows"][name] = probe(name, h, kind)
        with open(os.path.join(args.out, "s35_pair_probe.json"), "w") as fh:
            json.dump(out, fh, indent=1)


if __name__ == "__main__":
    main()
