"""Registers and spill bytes of the gated delta backward's kernels compiled for sm_90 without a GPU.

Runs ``chunk_bwd`` on CPU tensors with Triton's launch replaced by a compile for sm_90 (the stub driver and
compile helper of ``gated_delta_ptx_fingerprint.py``; nothing executes) and prints, per launched kernel, what
``cuobjdump --dump-resource-usage`` reports for its cubin. The device runs Triton 3.6, whose register allocation
differs from newer releases' (session 40: the same Gluon kernel 248 registers on 3.6, 239 on 3.9): install the
device's version into a folder of its own and put it first on the path::

    pip install --no-deps --target /tmp/t36lib triton==3.6.0
    PYTHONPATH=/tmp/t36lib:src TRITON_CACHE_DIR=/tmp/t36cache python benchmarks/sm90_resources.py

``--gluon``: the Gluon backward kernels of attention and HSTU instead (their ``compile_sm90`` entry points, bf16,
head dims 128, default mask flags). Gated delta shapes: bf16, H = HV = 16, K = V = 128 (the speed path), sequences of
``--lengths`` (default three, 16384 tokens in all; the launch rules follow the sequence count, e.g. FUSE_DV is on from
66 chains); k's l2norm backward in the WY kernel (the keep-copies path) unless ``--no-l2n``; T recomputed (no kept
T), so the solve and w/u kernels are the no-keep path's.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile

os.environ.pop("TRITON_INTERPRET", None)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
import triton  # noqa: E402
from gated_delta_ptx_fingerprint import TARGET, _arg_type, _StubDriver  # noqa: E402
from triton.compiler import ASTSource  # noqa: E402
from triton.runtime.jit import JITFunction  # noqa: E402

SEEN: dict[str, str] = {}
DUMP = ""  # --dump: a folder for each kernel's TTGIR and PTX


def _usage(cubin: bytes) -> str:
    tool = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "cuobjdump")
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        out = subprocess.run([tool, "--dump-resource-usage", f.name], capture_output=True, text=True).stdout
    return " ".join(re.findall(r"(?:REG|STACK|SHARED|LOCAL):\d+", out))


def compile_launch(fn, args, kwargs):
    """``gated_delta_ptx_fingerprint.compile_launch`` plus the launcher's 16-divisibility specialisation of pointer
    and integer arguments (``tt.divisibility``): without it the loads are not vectorised and the register counts are
    far from the device's."""
    opts = {k: kwargs.pop(k) for k in ("num_warps", "num_stages") if k in kwargs}
    values = dict(zip(fn.arg_names, args, strict=False))
    values.update(kwargs)
    sig, consts, attrs = {}, {}, {}
    for i, (param, name) in enumerate(zip(fn.params, fn.arg_names, strict=True)):
        value = values.get(name, param.default)
        if param.is_constexpr:
            sig[name], consts[name] = "constexpr", value
            continue
        sig[name] = _arg_type(name, value)
        aligned = (
            value.data_ptr() % 16 == 0
            if isinstance(value, torch.Tensor)
            else isinstance(value, int) and not isinstance(value, bool) and value % 16 == 0
        )
        if aligned:
            attrs[(i,)] = [["tt.divisibility", 16]]
    src = ASTSource(fn=fn, signature=sig, constexprs=consts, attrs=attrs)
    return triton.compile(src, target=TARGET, options=opts), consts, opts


def _compile_instead_of_launch(self, *args, grid, warmup, **kwargs):
    compiled, consts, opts = compile_launch(self, args, kwargs)
    # dynamic shared memory (what bounds the programs per SM of the tiled kernels; the cubin's SHARED is the static part)
    SEEN[f"{self.fn.__name__} {opts}"] = f"{_usage(compiled.asm['cubin'])} DYN:{compiled.metadata.shared}"
    if DUMP:  # the kernel's TTGIR and PTX, and a count of the lines that tell layout shuffles and loads apart
        base = os.path.join(DUMP, self.fn.__name__)
        for ext in ("ttgir", "ptx"):
            with open(f"{base}.{ext}", "w") as f:
                f.write(compiled.asm[ext])
        counts = {
            "convert_layout": compiled.asm["ttgir"].count("ttg.convert_layout"),
            "ld.global": compiled.asm["ptx"].count("ld.global"),
            "st.global": compiled.asm["ptx"].count("st.global"),
        }
        SEEN[f"{self.fn.__name__} {opts}"] += f"  {counts}"


def gluon_kernels() -> None:
    from jagattn._core import gluon

    if not gluon.GLUON:
        print("this Triton has no Gluon Hopper API")
        return
    from jagattn.attention.triton import bwd_gluon as attn
    from jagattn.hstu.triton import bwd_gluon as hstu

    for name, build in (
        ("attention dK/dV", attn.compile_sm90),
        ("attention dQ", attn.compile_dq_sm90),
        ("hstu dK/dV", hstu.compile_sm90),
        ("hstu dQ", hstu.compile_dq_sm90),
        *((f"hstu dK/dV clip {c}", lambda c=c: hstu.compile_sm90(clip=c)) for c in (0, 1, 2)),
        *((f"hstu dQ clip {c}", lambda c=c: hstu.compile_dq_sm90(clip=c)) for c in (0, 1, 2)),
    ):
        k = build()
        print(f"{name:16s} {_usage(k.asm['cubin'])} dynamic shared {k.metadata.shared}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--no-l2n", action="store_true")
    ap.add_argument("--gluon", action="store_true")
    ap.add_argument("--dump", default="", help="write each gated delta kernel's TTGIR and PTX to this folder")
    ap.add_argument(
        "--lengths", default="4000,100,12284",
        help="sequence lengths (the launch rules follow the sequence count: e.g. 8 x 4096 for H16-8seqs)",
    )  # fmt: skip
    args = ap.parse_args()
    global DUMP
    DUMP = args.dump
    if DUMP:
        os.makedirs(DUMP, exist_ok=True)
    if args.gluon:
        print("triton", triton.__version__)
        gluon_kernels()
        return
    triton.runtime.driver.set_active(_StubDriver())
    JITFunction.run = _compile_instead_of_launch
    from jagattn.gated_delta.triton import chunk_bwd

    torch.manual_seed(0)
    h = hv = 16
    dk = dv = 128
    lengths = [int(x) for x in args.lengths.split(",")]
    cu = torch.tensor([0, *torch.tensor(lengths).cumsum(0).tolist()], dtype=torch.int32)
    t = int(cu[-1])  # past the bf16 precise path's 65536 token-heads (16 heads: 4096 tokens or more)
    bf = torch.bfloat16
    q, k = torch.randn(t, h, dk, dtype=bf), torch.randn(t, h, dk, dtype=bf)
    v, do = torch.randn(t, hv, dv, dtype=bf), torch.randn(t, hv, dv, dtype=bf)
    g, beta = -torch.rand(t, hv), torch.rand(t, hv)
    r = None if args.no_l2n else torch.rand(t, h)
    chunk_bwd.chunk_bwd(q, k, v, g, beta, None, cu, dk**-0.5, do, None, k_l2n_rstd=r)
    print("triton", triton.__version__)
    for key, usage in SEEN.items():
        print(f"{key:70s} {usage}")


if __name__ == "__main__":
    main()
