"""PTX fingerprints of the gated delta chunked kernels, compiled for sm_90 on a machine without a GPU.

Runs the chunked forward and backward launchers on CPU tensors with Triton's launch replaced by a
compile for ``GPUTarget("cuda", 90, 32)`` (nothing executes), and writes one hash per launched kernel
and constexpr set: the PTX without debug lines (``.loc``/``.file``/sections), so line shifts do not
count. Use it to show that a change leaves the default path's code as it was, without a device:

    git worktree add /tmp/old <rev>
    (cd /tmp/old && PYTHONPATH=src python benchmarks/gated_delta_ptx_fingerprint.py /tmp/a.json)
    PYTHONPATH=src python benchmarks/gated_delta_ptx_fingerprint.py /tmp/b.json   # then compare

Kernels whose constexpr sets changed (new constexprs) show up under different keys; compare those by
hand (``PTXDUMP=path`` writes the normalised PTX of the bf16 ``wy`` kernel), or with ``PTXDIR=dir``
(every kernel's PTX without its ``.param`` lines and with parameter numbers erased, so a new unused
pointer argument or a new ``NORM=False`` / ``FUSE_DV=False`` constexpr compares equal; ``diff -r`` two such dirs). Uses the local Triton,
whose code generation differs from the device's version: equal hashes mean equal programs here.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys

os.environ.pop("TRITON_INTERPRET", None)

import torch  # noqa: E402
import triton  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.compiler import ASTSource  # noqa: E402
from triton.runtime.jit import JITFunction  # noqa: E402

TARGET = GPUTarget("cuda", 90, 32)
TYPES = {
    torch.float32: "fp32",
    torch.float16: "fp16",
    torch.bfloat16: "bf16",
    torch.int32: "i32",
    torch.int64: "i64",
    torch.float64: "fp64",
}
FINGERPRINTS: dict[str, str] = {}


class _StubDriver:
    """Enough of a driver for Triton to compile for sm_90 where no GPU exists."""

    def get_current_target(self):
        return TARGET

    def get_active_torch_device(self):
        return torch.device("cpu")

    def __getattr__(self, name):
        raise AttributeError(name)


def _arg_type(name, value):
    if isinstance(value, torch.Tensor):
        return "*" + TYPES[value.dtype]
    if isinstance(value, bool):
        return "i1"
    if isinstance(value, int):
        return "i32" if -(2**31) <= value < 2**31 else "i64"
    if isinstance(value, float):
        return "fp32"
    raise TypeError(f"argument {name}: {type(value).__name__}")


def _normalised_ptx(ptx: str) -> str:
    ptx = ptx.split(".section")[0]
    return "\n".join(
        line
        for line in ptx.splitlines()
        if not line.strip().startswith((".loc", ".file", "//")) and "$L__" not in line and "debug" not in line
    )


def compile_launch(fn, args, kwargs):
    """``(compiled kernel, constexprs, options)`` of one launch of ``fn`` compiled for ``TARGET``."""
    opts = {k: kwargs.pop(k) for k in ("num_warps", "num_stages") if k in kwargs}
    values = dict(zip(fn.arg_names, args, strict=False))
    values.update(kwargs)
    sig, consts = {}, {}
    for param, name in zip(fn.params, fn.arg_names, strict=True):
        value = values.get(name, param.default)
        if param.is_constexpr:
            sig[name], consts[name] = "constexpr", value
        else:
            sig[name] = _arg_type(name, value)
    compiled = triton.compile(ASTSource(fn=fn, signature=sig, constexprs=consts), target=TARGET, options=opts)
    return compiled, consts, opts


def _compile_instead_of_launch(self, *args, grid, warmup, **kwargs):
    compiled, consts, opts = compile_launch(self, args, kwargs)
    ptx = _normalised_ptx(compiled.asm["ptx"])
    key = f"{self.fn.__name__} {sorted((k, str(v)) for k, v in consts.items())} {opts}"
    FINGERPRINTS[key] = hashlib.sha1(ptx.encode()).hexdigest()[:12]
    if os.environ.get("PTXDUMP") and "wy" in self.fn.__name__ and "tf32" in str(consts):
        with open(os.environ["PTXDUMP"], "w") as f:
            f.write(ptx)
    if os.environ.get("PTXDIR"):  # every kernel's normalised PTX, parameter numbers erased (see --help)
        body = re.sub(r"_param_\d+", "_param_N", "\n".join(x for x in ptx.splitlines() if ".param" not in x))
        name = hashlib.sha1(re.sub(r", \('(NORM|FUSE_DV)', 'False'\)", "", key).encode()).hexdigest()[:12]
        with open(os.path.join(os.environ["PTXDIR"], f"{self.fn.__name__}-{name}.ptx"), "w") as f:
            f.write(body)


def main(path: str) -> None:
    triton.runtime.driver.set_active(_StubDriver())
    JITFunction.run = _compile_instead_of_launch
    from jagattn.gated_delta.triton import chunk_bwd, chunk_fwd

    torch.manual_seed(0)
    h, hv, dk, dv = 2, 4, 128, 128
    cu = torch.tensor([0, 100, 100, 400], dtype=torch.int32)
    t = 400
    # (q/k dtype, v dtype): fp16 inputs reach the kernels with fp16 q/k (no l2norm) or with the
    # normalised q/k in fp32 (ops._prep, since session 8)
    for qk_dt, dt in ((torch.bfloat16,) * 2, (torch.float16,) * 2, (torch.float32, torch.float16)):
        q, k = torch.randn(t, h, dk, dtype=qk_dt), torch.randn(t, h, dk, dtype=qk_dt)
        v, do = torch.randn(t, hv, dv, dtype=dt), torch.randn(t, hv, dv, dtype=dt)
        g, beta = -torch.rand(t, hv), torch.rand(t, hv)
        h0, dht = torch.randn(3, hv, dk, dv), torch.randn(3, hv, dk, dv)
        chunk_fwd.chunk_fwd(q, k, v, g, beta, h0, cu, dk**-0.5)
        chunk_bwd.chunk_bwd(q, k, v, g, beta, h0, cu, dk**-0.5, do, dht)
        if qk_dt == dt:  # q/k normalised on load (ops.NORM_ON_LOAD): per-row factors [T, H] fp32
            rstd = (torch.rand(t, h), torch.rand(t, h))
            chunk_fwd.chunk_fwd(q, k, v, g, beta, h0, cu, dk**-0.5, rstd=rstd)
            chunk_bwd.chunk_bwd(q, k, v, g, beta, h0, cu, dk**-0.5, do, dht, rstd=rstd)
            chunk_bwd.FUSE_DV = "1"  # dU_local inside dhu (JAGATTN_GD_FUSE_DV; default auto)
            chunk_bwd.chunk_bwd(q, k, v, g, beta, h0, cu, dk**-0.5, do, dht)
            chunk_bwd.FUSE_DV = "0"
    with open(path, "w") as f:
        json.dump(FINGERPRINTS, f, indent=1)
    print(len(FINGERPRINTS), "kernels ->", path)


if __name__ == "__main__":
    main(sys.argv[1])
