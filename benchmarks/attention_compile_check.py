"""Compile the attention kernels for sm_90 on a machine without a GPU; report registers and spills.

Catches what the Triton interpreter accepts but the compiler rejects (non-constexpr globals,
layout errors) and shows register pressure per autotune config before any device time is
spent. Uses the local Triton (not the device's 3.6), so it is a lead, not a verdict.

Usage: ``.venv/bin/python benchmarks/attention_compile_check.py [--d 128] [--dv 128] [--tma both|0|1]``
(must run WITHOUT ``TRITON_INTERPRET``). The forward, the dQ and the dK/dV kernel compile with their pointer
loads and with their TMA descriptor loads (K/V; dK/dV: q/dO) (``--tma both``, the default; the atomic dQ path's
dK/dV kernel has pointer loads only).
"""

from __future__ import annotations

import argparse
import os
import sys

import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

from jagattn.attention.triton import bwd, fwd

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compile_check import _resources  # noqa: E402  (cuobjdump's registers / stack of a cubin)


def _signature(kernel, dtype: str, constexprs: dict) -> dict:
    sig = {}
    for name in kernel.fn.arg_names:
        if name in constexprs:
            sig[name] = "constexpr"
        elif name.isupper() and name not in (
            "B",
            "T",
            "HK0",
            "GROUP",
            "SEQ_BUCKET",
            "LONG_KEYS",
            "KEYS_CLASS",
            "HQ",
        ):
            ptr_t = "fp32" if name in ("LSE", "LSE2", "DELTA", "DLSE", "DQ_ACC") else dtype
            sig[name] = "*i32" if name.startswith("CU_") else f"*{ptr_t}"
        elif name in ("qk_scale", "softcap_in", "softcap_out", "scale"):
            sig[name] = os.environ.get("CHECK_FLOAT_TYPE", "fp32")  # Inductor passes fp64
        else:
            sig[name] = "i32"
    return sig


def check(kernel, constexprs: dict, dtype: str = "bf16", configs=None, tag: str = "") -> None:
    """Compile ``kernel`` for each config; ``tag`` follows the config in each line (a constexpr's value)."""
    autotuner = kernel
    for cfg in configs or autotuner.configs:
        cx = dict(constexprs, **cfg.kwargs)
        sig = _signature(autotuner, dtype, cx)
        # what the JIT specializes at run time: 16-aligned pointers and strides that are multiples of 16
        attrs = {
            (i,): [["tt.divisibility", 16]]
            for i, name in enumerate(autotuner.fn.arg_names)
            if sig[name].startswith("*") or name.startswith("stride")
        }
        src = ASTSource(fn=autotuner.fn, signature=sig, constexprs=cx, attrs=attrs)
        try:
            ck = triton.compile(
                src,
                target=GPUTarget("cuda", 90, 32),
                options={"num_warps": cfg.num_warps, "num_stages": cfg.num_stages}
                | ({"maxnreg": cfg.maxnreg} if getattr(cfg, "maxnreg", None) else {}),
            )
            rep = _resources(ck.asm["cubin"])
            wgmma = "wgmma" in ck.asm["ptx"]
            cap = f" maxnreg={cfg.maxnreg}" if getattr(cfg, "maxnreg", None) else ""
            print(f"  {autotuner.fn.__name__:36s} {cfg.kwargs} w{cfg.num_warps} s{cfg.num_stages}{cap}{tag}: "
                  f"{rep} smem={ck.metadata.shared} wgmma={wgmma}")  # fmt: skip
        except Exception as exc:
            msg = str(exc).splitlines()
            last = msg[-1] if msg else ""
            print(f"  {autotuner.fn.__name__:36s} {cfg.kwargs}{tag}: FAILED {type(exc).__name__}: {last}")
            print("\n".join(msg[:30]))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--d", type=int, default=128)
    ap.add_argument("--dv", type=int, default=128)
    ap.add_argument("--flags", default="causal", choices=["causal", "full", "window", "softcap"])
    ap.add_argument("--dtype", default="bf16")
    ap.add_argument("--tma", choices=["both", "0", "1"], default="both",
                    help="loads of the forward, dQ and dK/dV kernels: pointers (0), TMA (1), both")  # fmt: skip
    ap.add_argument("--extra", type=lambda t: tuple(int(x) for x in t.split(",")), nargs="*", default=[],
                    help="extra configs BM,BN,warps,stages to try on every kernel")  # fmt: skip
    args = ap.parse_args()
    left, right, cap = {"causal": (False, True, False), "full": (False, False, False),
                        "window": (True, True, False), "softcap": (True, True, True)}[args.flags]  # fmt: skip
    common = dict(
        D=args.d, DV=args.dv, BLOCK_D=fwd.head_block(args.d), BLOCK_DV=fwd.head_block(args.dv),
        HAS_LEFT=left, HAS_RIGHT=right, HAS_SOFTCAP=cap, DOT_PREC="tf32",
    )  # fmt: skip
    bwd_common = dict(common, ROW_PAD=bwd.ROW_PAD)
    print(f"D={args.d} Dv={args.dv} {args.flags} {args.dtype}")
    tmas = {"both": (False, True), "0": (False,), "1": (True,)}[args.tma]
    fwd_cx = dict(common, FOLD_SCALE=not cap, HEAD_FAST=False, TMA=tmas[-1])
    for tma in tmas:
        check(fwd._attention_fwd_kernel, dict(fwd_cx, TMA=tma), args.dtype, tag=f" TMA={tma}")
    if args.extra:
        cfgs = [
            triton.Config({"BLOCK_M": bm, "BLOCK_N": bn}, num_warps=w, num_stages=s)
            for bm, bn, w, s in args.extra
        ]
        for kern in (fwd._attention_fwd_kernel, bwd._attention_bwd_dkdv_kernel, bwd._attention_bwd_dq_kernel):
            cx = {
                bwd._attention_bwd_dkdv_kernel: dict(
                    bwd_common, ATOMIC_DQ=True, DQ_T=True, HEAD_MAJOR=False, TMA=False
                ),
                bwd._attention_bwd_dq_kernel: dict(bwd_common, HAS_DLSE=False, TMA=tmas[-1]),
                fwd._attention_fwd_kernel: fwd_cx,
            }
            check(kern, cx.get(kern, common), args.dtype, cfgs)
    check(
        bwd._attention_bwd_dkdv_dq_kernel,
        dict(bwd_common, ATOMIC_DQ=True, HEAD_MAJOR=False, TMA=False),
        args.dtype,
    )
    for tma in tmas:
        check(
            bwd._attention_bwd_dkdv_kernel,
            dict(bwd_common, ATOMIC_DQ=False, HEAD_MAJOR=False, TMA=tma),
            args.dtype,
            tag=f" TMA={tma}",
        )
    for tma in tmas:
        check(
            bwd._attention_bwd_dq_kernel,
            dict(bwd_common, HAS_DLSE=False, TMA=tma),
            args.dtype,
            tag=f" TMA={tma}",
        )


if __name__ == "__main__":
    main()
