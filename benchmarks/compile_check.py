"""Compile every Triton kernel a public call launches for sm_90, on a machine without a GPU: registers,
spill stack and shared memory per kernel and per autotune config.

How: with the interpreter off, the op runs on CPU tensors with the device checks patched out; each kernel
launch (through an autotuner or a bare ``@triton.jit`` function) is recorded instead of run, with the
arguments the launcher passed, and every config the autotuner's prune keeps is then compiled for
``cuda:90`` with those arguments' types, constexprs and 16-divisibility (as the JIT would specialize
them). Outputs are never computed (the backward sees uninitialised forward outputs: shapes are what
matter). Uses the local Triton (not the device's), so it is a lead for planning variants, not a verdict;
``benchmarks/attention_compile_check.py`` is the older attention-only tool with explicit constexprs.

Usage (must run WITHOUT ``TRITON_INTERPRET``)::

    .venv/bin/python benchmarks/compile_check.py --family hstu [--d 128] [--dv 128] [--len 1024] [--batch 2]
        [--heads 4] [--dtype bf16] [--no-bwd] [--all-configs] [--ttgir DIR] [--record-only]
        [--contextual C] [--window W]   (hstu: e.g. the ctx6-w256 row's 6 and 256)

``--all-configs`` compiles the whole config list instead of the pruned one; ``--ttgir DIR`` writes each
compiled kernel's TTGIR, PTX and SASS there (files named ``L<launch>_<kernel>_<tile>``) (look for ``warp_group_dot_wait`` and ``local_alloc`` in the TTGIR, the
``cp.async`` widths in the PTX: ``cp.async.cg.shared.global [..], [..], 16`` is a 16-byte copy).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile

if os.environ.get("TRITON_INTERPRET", "0") not in ("", "0"):
    sys.exit("compile_check.py compiles for sm_90: run it without TRITON_INTERPRET")

os.environ.setdefault("JAGATTN_SMALL_FP32", "off")  # read at import: the kernels of the input dtype

import torch  # noqa: E402
import triton  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.compiler import ASTSource  # noqa: E402
from triton.runtime.autotuner import Autotuner  # noqa: E402
from triton.runtime.jit import JITFunction  # noqa: E402

import jagattn  # noqa: E402
from jagattn._core import triton_utils  # noqa: E402

CUOBJDUMP = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "cuobjdump")
_DTYPES = {
    torch.bfloat16: "bf16",
    torch.float16: "fp16",
    torch.float32: "fp32",
    torch.float64: "fp64",
    torch.int32: "i32",
    torch.int64: "i64",
    torch.int8: "i8",
    torch.uint8: "u8",
    torch.bool: "i1",
}

# (jit function, {name: value} of every argument incl. constexprs, configs to compile) per launch
LAUNCHES: list[tuple[JITFunction, dict, list]] = []
ALL_CONFIGS = False  # --all-configs: record every config of an autotuner, not only the pruned ones


def _jit(fn) -> JITFunction:
    while not isinstance(fn, JITFunction):
        fn = fn.fn
    return fn


def _record_autotuned(self, *args, **kwargs):
    self.nargs = dict(zip(self.arg_names, args, strict=False))
    cfgs = list(self.configs) if ALL_CONFIGS else self.prune_configs(kwargs)
    LAUNCHES.append((_jit(self.fn), {**self.nargs, **kwargs}, cfgs))


def _record_plain(self, *args, grid, warmup, **kwargs):
    opts = {k: kwargs.pop(k) for k in ("num_warps", "num_stages", "maxnreg") if k in kwargs}
    LAUNCHES.append(
        (self, {**dict(zip(self.arg_names, args, strict=False)), **kwargs}, [triton.Config({}, **opts)])
    )


def _signature(fn: JITFunction, values: dict) -> tuple[dict, dict, dict]:
    sig, constexprs, attrs = {}, {}, {}
    for i, p in enumerate(fn.params):
        name = p.name
        v = values.get(name, p.default if p.has_default else None)
        if p.is_constexpr:
            sig[name] = "constexpr"
            constexprs[name] = v
        elif isinstance(v, torch.Tensor):
            sig[name] = "*" + _DTYPES[v.dtype]
            attrs[(i,)] = [["tt.divisibility", 16]]  # the launchers' tensors come from torch's allocator
        elif v is None:
            sig[name] = "constexpr"
            constexprs[name] = None
        elif isinstance(v, bool):
            sig[name] = "i1"
        elif isinstance(v, int):
            if not p.do_not_specialize and v == 1:
                sig[name] = "constexpr"  # the JIT specializes an int argument equal to 1
                constexprs[name] = 1
            else:
                sig[name] = "i64" if abs(v) >= 2**31 else "i32"
                if not p.do_not_specialize and v % 16 == 0:
                    attrs[(i,)] = [["tt.divisibility", 16]]
        elif isinstance(v, float):
            sig[name] = "fp32"
        else:
            raise TypeError(f"{fn.__name__}: argument {name} of type {type(v).__name__}")
    return sig, constexprs, attrs


def _cuobjdump(cubin: bytes, flag: str) -> str:
    """``cuobjdump <flag>`` of a compiled kernel's cubin (stdout)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "k.cubin")
        with open(path, "wb") as f:
            f.write(cubin)
        return subprocess.run([CUOBJDUMP, flag, path], capture_output=True, text=True).stdout


def _resources(cubin: bytes) -> str:
    m = re.search(r"REG:(\d+) STACK:(\d+)", _cuobjdump(cubin, "--dump-resource-usage"))
    return f"regs={m.group(1)} stack={m.group(2)}" if m else "regs=? stack=?"


def _is_tile(name: str, value) -> bool:
    """Block-size constexprs (``BLOCK_M``, ``BV``, ``BK``, ``BC``, ...): printed per config."""
    return (
        name.startswith("B")
        and isinstance(value, int)
        and not isinstance(value, bool)
        and (name.startswith("BLOCK") or len(name) <= 3)
    )


def compile_all(ttgir_dir: str | None) -> None:
    seen = set()
    for n, (fn, values, cfgs) in enumerate(LAUNCHES):
        _, cx0, _ = _signature(fn, values)
        flags = {k: v for k, v in cx0.items() if not _is_tile(k, v) and v is not None}
        print(f"launch {n}: {fn.__name__} {flags}")
        for cfg in cfgs:
            vals = {**values, **cfg.kwargs}
            sig, cx, attrs = _signature(fn, vals)
            opts = {"num_warps": cfg.num_warps, "num_stages": cfg.num_stages}
            if getattr(cfg, "maxnreg", None):
                opts["maxnreg"] = cfg.maxnreg
            key = (
                fn.__name__,
                repr(sorted(sig.items())),
                repr(sorted((k, repr(v)) for k, v in cx.items())),
                repr(opts),
            )
            if key in seen:
                continue
            seen.add(key)
            tile = {k: v for k, v in cx.items() if _is_tile(k, v) or k in cfg.kwargs}
            head = f"  {fn.__name__:34s} {tile} w{cfg.num_warps} s{cfg.num_stages}"
            try:
                ck = triton.compile(
                    ASTSource(fn=fn, signature=sig, constexprs=cx, attrs=attrs),
                    target=GPUTarget("cuda", 90, 32),
                    options=opts,
                )
            except Exception as exc:  # a compile error is a result here, not a crash of the tool
                lines = str(exc).splitlines()
                print(f"{head}: FAILED {type(exc).__name__}: {lines[-1] if lines else ''}")
                continue
            print(
                f"{head}: {_resources(ck.asm['cubin'])} smem={ck.metadata.shared} wgmma={'wgmma' in ck.asm['ptx']}"
            )
            if ttgir_dir:
                os.makedirs(ttgir_dir, exist_ok=True)
                name = f"L{n}_{fn.__name__}_{'_'.join(f'{k}{v}' for k, v in tile.items())}_w{cfg.num_warps}s{cfg.num_stages}"
                for ext in ("ttgir", "ptx"):
                    with open(os.path.join(ttgir_dir, f"{name}.{ext}"), "w") as f:
                        f.write(ck.asm[ext])
                with open(os.path.join(ttgir_dir, f"{name}.sass"), "w") as f:
                    f.write(_cuobjdump(ck.asm["cubin"], "-sass"))


def _call(family: str, args) -> None:
    dt = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[args.dtype]
    gen = torch.Generator().manual_seed(0)
    lens = [args.len] * args.batch
    cu = torch.tensor([0, *torch.tensor(lens).cumsum(0).tolist()], dtype=torch.int32)
    t = sum(lens)

    def rnd(*shape):
        return torch.randn(*shape, generator=gen).to(dt).requires_grad_(args.bwd)

    if family == "attention":
        q, k, v = (
            rnd(t, args.heads, args.d),
            rnd(t, max(args.heads // 4, 1), args.d),
            rnd(t, max(args.heads // 4, 1), args.dv),
        )
        out = jagattn.attention(q, k, v, cu, cu, args.len, args.len, causal=True, backend="triton")
    elif family == "hstu":
        q, k, v = rnd(t, args.heads, args.d), rnd(t, args.heads, args.d), rnd(t, args.heads, args.dv)
        targets = torch.full((args.batch,), 4, dtype=torch.int32)
        out = jagattn.hstu_attention(
            q, k, v, cu, args.len, alpha=1.0 / args.d, num_targets=targets, backend="triton",
            contextual_seq_len=args.contextual, max_attn_len=args.window,
        )  # fmt: skip
    elif family == "gated_delta":
        q, k, v = rnd(t, args.heads, args.d), rnd(t, args.heads, args.d), rnd(t, args.heads, args.dv)
        g = (-torch.rand(t, args.heads, generator=gen)).requires_grad_(args.bwd)
        beta = torch.rand(t, args.heads, generator=gen).to(dt).requires_grad_(args.bwd)
        out, _ = jagattn.gated_delta_rule(
            q, k, v, g, beta, cu_seqlens=cu, use_qk_l2norm=True, backend="triton"
        )
    else:
        raise SystemExit(f"unknown family {family!r}")
    if isinstance(out, tuple):
        out = out[0]
    if args.bwd:
        out.backward(torch.zeros_like(out))


def main() -> None:
    global ALL_CONFIGS
    ap = argparse.ArgumentParser()
    ap.add_argument("--family", required=True, choices=["attention", "hstu", "gated_delta"])
    ap.add_argument("--d", type=int, default=128)
    ap.add_argument("--dv", type=int, default=128)
    ap.add_argument("--len", type=int, default=1024)
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--dtype", default="bf16", choices=["bf16", "fp16", "fp32"])
    ap.add_argument("--no-bwd", dest="bwd", action="store_false")
    ap.add_argument("--contextual", type=int, default=0, help="hstu: contextual_seq_len")
    ap.add_argument("--window", type=int, default=0, help="hstu: max_attn_len")
    ap.add_argument("--all-configs", action="store_true")
    ap.add_argument("--ttgir", default=None)
    ap.add_argument("--record-only", action="store_true", help="list the launches, compile nothing")
    args = ap.parse_args()
    ALL_CONFIGS = args.all_configs

    # the CPU tensors pass the device checks; launches are recorded, never run
    triton_utils.device_reasons = lambda device_type: []
    triton_utils.backend_unavailable_reason = lambda: None
    for mod in list(sys.modules.values()):
        if getattr(mod, "__name__", "").startswith("jagattn"):
            for name in ("device_reasons", "backend_unavailable_reason"):
                if hasattr(mod, name) and mod is not triton_utils:
                    setattr(mod, name, getattr(triton_utils, name))
    Autotuner.run = _record_autotuned
    JITFunction.run = _record_plain

    _call(args.family, args)
    print(f"{args.family} {args.dtype} D={args.d} Dv={args.dv} len={args.len}x{args.batch} H={args.heads}: "
          f"{len(LAUNCHES)} launches, triton {triton.__version__}, sm_90")  # fmt: skip
    if args.record_only:
        for n, (fn, _values, cfgs) in enumerate(LAUNCHES):
            print(f"launch {n}: {fn.__name__}, {len(cfgs)} config(s)")
        return
    compile_all(args.ttgir)


if __name__ == "__main__":
    main()
