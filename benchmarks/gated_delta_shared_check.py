"""Shared memory of every gated delta chunk kernel compiled for sm_90, on a machine without a GPU.

Session 9's GPU fuzz met ``OutOfResources: shared memory, Required 268548, Hardware limit 232448`` for
fp16 dk=256 dv=64; the interpreter cannot see such limits. This compiles every kernel the chunked
forward and backward launch (scalar gate and per-key gates) for a grid of head dims and dtypes with the
local Triton (``gated_delta_ptx_fingerprint``'s stub driver) and lists those over the Hopper limit.
The local Triton's allocation can differ from the device's: a pass here is a screen, not a proof.

    PYTHONPATH=src python benchmarks/gated_delta_shared_check.py [--dims 256,64 --dims 128,16]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("fp", os.path.join(HERE, "gated_delta_ptx_fingerprint.py"))
fp = importlib.util.module_from_spec(spec)
spec.loader.exec_module(fp)

import triton  # noqa: E402
from triton.runtime.jit import JITFunction  # noqa: E402

LIMIT = 232448  # bytes per block on H100/H200 (the device's error message)
SEEN: dict[str, int] = {}
CASE = [""]


def _compile(self, *args, grid, warmup, **kwargs):
    compiled, consts, opts = fp.compile_launch(self, args, kwargs)
    key = f"{self.fn.__name__} {sorted((k, str(v)) for k, v in consts.items())} {opts}"
    if key not in SEEN:
        SEEN[key] = compiled.metadata.shared
        flag = "OVER" if compiled.metadata.shared > LIMIT else "ok"
        print(f"{flag:4} {compiled.metadata.shared:7d} {CASE[0]:28} {self.fn.__name__} {opts}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dims", action="append", help="dk,dv (default: a grid)")
    ap.add_argument("--dtype", action="append", choices=["bf16", "fp16"])
    ap.add_argument("--no-gk", action="store_true")
    ap.add_argument("--raw-qk", action="store_true", help="fp16 q/k as given (no l2norm) instead of fp32")
    ap.add_argument(
        "--seqs", type=int, default=2, help="sequences (>= 66 x 2 heads: the widest state-pass V block)"
    )
    args = ap.parse_args()
    triton.runtime.driver.set_active(fp._StubDriver())
    JITFunction.run = _compile
    from jagattn.gated_delta.triton import chunk_bwd, chunk_fwd, chunk_gk

    dims = [tuple(int(x) for x in d.split(",")) for d in args.dims] if args.dims else [
        (a, b) for a in (16, 64, 128, 256) for b in (16, 64, 128, 256)]  # fmt: skip
    dts = {"bf16": torch.bfloat16, "fp16": torch.float16}
    h, hv = 2, 2
    lens = [70, 130] if args.seqs == 2 else [3] * args.seqs
    t = sum(lens)
    cu = torch.tensor([0] + lens, dtype=torch.int32).cumsum(0).to(torch.int32)
    for name in args.dtype or ["bf16", "fp16"]:
        dt = dts[name]
        for dk, dv in dims:
            CASE[0] = f"{name} dk={dk} dv={dv}"
            # ops._prep: fp16 q/k normalised in fp32 (without l2norm they reach the kernels in fp16)
            qk_dt = dt if dt == torch.bfloat16 or args.raw_qk else torch.float32
            q, k = torch.randn(t, h, dk, dtype=qk_dt), torch.randn(t, h, dk, dtype=qk_dt)
            v, do = torch.randn(t, hv, dv, dtype=dt), torch.randn(t, hv, dv, dtype=dt)
            g, beta = -torch.rand(t, hv), torch.rand(t, hv).to(dt)
            h0, dht = torch.randn(len(lens), hv, dk, dv), torch.randn(len(lens), hv, dk, dv)
            chunk_fwd.chunk_fwd(q, k, v, g, beta, h0, cu, dk**-0.5)
            chunk_bwd.chunk_bwd(q, k, v, g, beta, h0, cu, dk**-0.5, do, dht)
            if not args.no_gk:
                gk = -torch.rand(t, hv, dk)
                chunk_gk.chunk_fwd_gk(q, k, v, g, gk, beta, h0, cu, dk**-0.5, dt)
                chunk_gk.chunk_bwd_gk(q, k, v, g, gk, beta, h0, cu, dk**-0.5, do, dht, dt)
    over = [k for k, s in SEEN.items() if s > LIMIT]
    print(f"{len(SEEN)} kernels compiled, {len(over)} over {LIMIT} bytes")
    sys.exit(1 if over else 0)


if __name__ == "__main__":
    main()
