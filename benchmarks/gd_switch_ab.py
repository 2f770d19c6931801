"""Same-process A/B of one module-level switch of the gated delta Triton path on the BENCHMARKS.md rows.

A switch is ``module:ATTR=a,b[,c]`` (e.g. ``jagattn.gated_delta.triton.common:STATE_PREFETCH=0,1``): the
attribute is set to each value in turn (strings; ``True``/``False`` for booleans), or ``config:A|B|...``
with launch configs in ``JAGATTN_GD_CONFIG`` syntax (``default`` for none), and the public function
(``backend="triton"``, l2norm, no states, the rows of ``gated_delta_triton.py``) is run:

- outputs: o and the five gradients of the first value are the reference; every other value reports
  whether it is bitwise equal, else ``max |a - b| / max |b|`` per output;
- timing: forward (no grad) and forward+backward medians (``triton.testing.do_bench``), the values
  alternated over ``--repeats`` passes (A B A B ...) so that drift hits both; bwd = fwd+bwd - fwd;
- peak memory of one forward+backward over the inputs, per value;
- per-kernel CUDA time of one forward and one backward per value (``gated_delta_triton._profile_fwd_bwd``).

Usage on the GPU machine: ``PYTHONPATH=src python3 benchmarks/gd_switch_ab.py --switch <spec> --out $OUT``
(``--rows H16-1seq,H16-8seqs``). Writes ``$OUT/gd_switch_ab.json``.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys

import torch
import triton

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gated_delta_triton as gdt  # noqa: E402  (rows, inputs and the profiler helper of the suite script)

import jagattn  # noqa: E402

NAMES = ("o", "dq", "dk", "dv", "dg", "dbeta")


class _Configs:
    """The ``config:`` switch: launch configs as ``JAGATTN_GD_CONFIG`` strings (``|``-separated
    alternatives, ``default`` for none), set through ``common.CONFIG_OVERRIDE``."""

    def __init__(self):
        from jagattn.gated_delta.triton import common

        self.common = common

    def __setattr__(self, name, value):
        if name != "value":
            return object.__setattr__(self, name, value)
        self.common.CONFIG_OVERRIDE.clear()
        if value != "default":
            self.common.CONFIG_OVERRIDE.update(self.common.parse_config_override(value))
        object.__setattr__(self, name, value)


def parse_switch(spec: str):
    """``(object, attribute, values)`` of a switch spec: ``module:ATTR=a,b`` or ``config:a|b``."""
    if spec.startswith("config:"):
        obj = _Configs()
        obj.value = "default"
        return obj, "value", spec[len("config:") :].split("|")
    target, values = spec.split("=", 1)
    mod_name, attr = target.split(":")
    mod = importlib.import_module(mod_name)
    conv = {"True": True, "False": False}
    return mod, attr, [conv.get(v, v) for v in values.split(",")]


def bench(fn, grads=None) -> float:
    return triton.testing.do_bench(fn, warmup=25, rep=150, grad_to_none=grads, return_mode="median")


def run_row(name: str, h: int, kind: str, mod, attr: str, values: list, repeats: int, profile: bool) -> dict:
    q, k, v, g, beta, cu = gdt.make(h, gdt.lengths_for(kind))
    leaves = [t.detach().requires_grad_(True) for t in (q, k, v, g, beta)]
    do = torch.randn_like(v)

    def fwd():
        return jagattn.gated_delta_rule(*leaves, cu_seqlens=cu, use_qk_l2norm=True, backend="triton")[0]

    def fwd_bwd():
        fwd().backward(do)

    def outputs():
        o = fwd()
        grads = torch.autograd.grad(o, leaves, do)
        return [o.detach().clone(), *(x.clone() for x in grads)]

    old = getattr(mod, attr)
    res: dict = {"row": name, "values": {}}
    try:
        ref = None
        for val in values:
            setattr(mod, attr, val)
            outs = outputs()
            again = outputs()
            rec = {"bitwise_repeat": all(torch.equal(a, b) for a, b in zip(outs, again, strict=True))}
            if ref is None:
                ref = outs
            else:
                same = {n_: torch.equal(a, b) for n_, a, b in zip(NAMES, outs, ref, strict=True)}
                rec["bitwise_equal_to_first"] = all(same.values())
                rec["rel_diff_to_first"] = {
                    n_: float((a.float() - b.float()).abs().max() / b.float().abs().max().clamp_min(1e-30))
                    for n_, a, b in zip(NAMES, outs, ref, strict=True)
                }
            rec["peak_fwd_bwd_gb"] = gdt.peak_bytes(fwd_bwd, leaves) / 1e9
            for x in leaves:
                x.grad = None
            rec["fwd_ms"], rec["bwd_ms"] = [], []
            res["values"][str(val)] = rec
        for _ in range(repeats):
            for val in values:
                setattr(mod, attr, val)
                with torch.no_grad():
                    t_f = bench(fwd)
                t_fb = bench(fwd_bwd, leaves)
                res["values"][str(val)]["fwd_ms"].append(t_f)
                res["values"][str(val)]["bwd_ms"].append(t_fb - t_f)
        if profile:
            for val in values:
                setattr(mod, attr, val)
                res["values"][str(val)]["kernels"] = gdt._profile_fwd_bwd(fwd, leaves, do)
    finally:
        setattr(mod, attr, old)
    for val, rec in res["values"].items():
        extra = (
            ""
            if "bitwise_equal_to_first" not in rec
            else f" bitwise={rec['bitwise_equal_to_first']}"
            + ("" if rec["bitwise_equal_to_first"] else f" diff {rec['rel_diff_to_first']}")
        )
        print(
            f"{name:12s} {attr}={val!s:6s}\n    fwd "
            + " ".join(f"{t:.3f}" for t in rec["fwd_ms"])
            + " bwd "
            + " ".join(f"{t:.3f}" for t in rec["bwd_ms"])
            + f" ms peak {rec['peak_fwd_bwd_gb']:.3f} GB repeat={rec['bitwise_repeat']}{extra}",
            flush=True,
        )
        for kname, ms in rec.get("kernels", {}).items():
            if ms >= 0.01:
                print(f"      {ms:7.3f}  {kname}")
    return res


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--switch", required=True, action="append", help="module:ATTR=a,b (repeatable)")
    ap.add_argument("--rows", default="H16-1seq,H16-8seqs,H16-ragged")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--no-profile", action="store_true")
    ap.add_argument("--out", default=".")
    args = ap.parse_args()
    rows = {r[0]: r for r in gdt.ROWS + gdt.SMALL_ROWS}
    result = {"device": torch.cuda.get_device_name(), "sha": os.environ.get("JAGATTN_GIT_SHA"), "runs": []}
    for spec in args.switch:
        mod, attr, values = parse_switch(spec)
        for rname in args.rows.split(","):
            _, h, kind = rows[rname]
            rec = run_row(rname, h, kind, mod, attr, values, args.repeats, not args.no_profile)
            rec["switch"] = spec
            result["runs"].append(rec)
            with open(os.path.join(args.out, "gd_switch_ab.json"), "w") as f:
                json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
