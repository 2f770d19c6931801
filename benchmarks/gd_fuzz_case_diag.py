"""One gated delta fuzz case, taken apart: every output's errors for our backend under several module
settings, for FLA's ``chunk_gated_delta_rule`` (``--fla``) and for the reference run in the input dtype,
all against the fp64 gold of ``fuzz_spec_rule.py``; then where the largest errors of ``--where`` sit
(token, sequence, chunk and row in the chunk, value head).

Session 14's GPU fuzz left ``--op gated_delta --seed 3002 --scale 4 --device cuda --dtype bf16`` failing
(dg 2.9x the allowance, lengths [157, 1, 1], K=256, V=64). Usage (GPU):

    PYTHONPATH=src python3 benchmarks/gd_fuzz_case_diag.py --seed 3002 --scale 4 --dtype bf16 \\
        --variant jagattn.gated_delta.triton.common.BF16_FP32=all --fla

``--variant`` takes ``;``-separated ``module.ATTR=value`` items (as the fuzz's ``--set``), applied for that
run only and restored after; give it several times.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import os
import random
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fuzz_spec_rule as fz  # noqa: E402

from jagattn import testing  # noqa: E402

BT = 64


def _apply(items: str) -> list:
    """Set every ``module.ATTR=value`` of ``items``; returns what to restore."""
    undo = []
    for item in filter(None, (x.strip() for x in items.split(";"))):
        path, _, value = item.partition("=")
        mod_name, _, attr = path.rpartition(".")
        mod = importlib.import_module(mod_name)
        if not hasattr(mod, attr):
            raise SystemExit(f"--variant {item}: {mod_name} has no attribute {attr}")
        try:
            parsed = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            parsed = value
        if isinstance(getattr(mod, attr), frozenset):  # the BF16_FP32 / BF16_KEEP name sets
            parsed = mod._name_set(
                attr, value, getattr(mod, "BF16_INTERMEDIATES" if "FP32" in attr else "KEEP_KERNELS")
            )
        undo.append((mod, attr, getattr(mod, attr)))
        setattr(mod, attr, parsed)
    return undo


def _errs(got: dict, gold: dict, low: dict) -> str:
    parts = []
    for name in gold:
        if name not in got:
            continue
        e = testing.errors(got[name], gold[name])
        r = testing.errors(low[name], gold[name])
        floor = 1e-5 * testing.rms(gold[name])
        ratio = max(e.max_abs / max(2 * r.max_abs + floor, 1e-30), e.rms / max(2 * r.rms + floor, 1e-30))
        flag = " FAIL" if ratio > 1 else ""
        parts.append(f"{name} {ratio:.2f}x (max {e.max_abs:.2e}/{r.max_abs:.2e}){flag}")
    return " | ".join(parts)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--scale", type=int, default=1)
    ap.add_argument("--dtype", choices=("bf16", "fp16"), default="bf16")
    ap.add_argument("--op", default="gated_delta", choices=("gated_delta", "gated_delta_gk"))
    ap.add_argument("--variant", action="append", default=[])
    ap.add_argument("--fla", action="store_true")
    ap.add_argument("--where", default="dg")
    ap.add_argument("--top", type=int, default=10)
    ap.add_argument(
        "--device",
        default="cuda",
        help="cpu: the interpreter (TRITON_INTERPRET=1); the case is drawn as on the GPU",
    )
    ap.add_argument(
        "--fp32-route",
        action="store_true",
        help="also run ours on fp32 copies of q/k/v/h0, outputs rounded back",
    )
    args = ap.parse_args()
    fz.DTYPE = {"bf16": torch.bfloat16, "fp16": torch.float16}[args.dtype]
    rng = random.Random(f"{args.op}-{args.seed}")
    rng.choice((torch.bfloat16, torch.float16))  # the fuzz's dtype draw (overridden by --dtype)
    desc, a, grads, run, ref = fz.OPS[args.op](rng, torch.device(args.device), fz.DTYPE, args.scale)
    print(desc, args.dtype, flush=True)
    gold_args = {k: (v.double() if v is not None and v.dtype.is_floating_point else v) for k, v in a.items()}
    gold = fz._outputs_and_grads(lambda x: ref(x, torch.float64), gold_args, grads, args.seed)
    low = fz._outputs_and_grads(lambda x: ref(x, fz.DTYPE), a, grads, args.seed)
    runs = {}
    for variant in [""] + args.variant:
        undo = _apply(variant)
        try:
            runs[variant or "default"] = fz._outputs_and_grads(run, a, grads, args.seed)
            print(f"[{variant or 'default'}] {_errs(runs[variant or 'default'], gold, low)}", flush=True)
        finally:
            for mod, attr, old in reversed(undo):
                setattr(mod, attr, old)
    if args.fp32_route:
        from jagattn.gated_delta.backends import TritonBackend

        old = TritonBackend.not_supported_reasons
        TritonBackend.not_supported_reasons = lambda self, inputs: []  # fp32 with gradients, for this run

        def run32(x):
            x32 = {
                k: (v.float() if k in ("q", "k", "v", "h0") and v is not None else v) for k, v in x.items()
            }
            out = run(x32)
            return {"o": out["o"].to(x["v"].dtype), "final_state": out["final_state"]}

        try:
            runs["fp32-route"] = fz._outputs_and_grads(run32, a, grads, args.seed)
            print(f"[fp32-route] {_errs(runs['fp32-route'], gold, low)}", flush=True)
        finally:
            TritonBackend.not_supported_reasons = old
    if args.fla:
        fz.PEER, fz._FLA = "fla", fz._load_fla()
        try:
            runs["fla"] = fz._outputs_and_grads(run, a, grads, args.seed)
            print(f"[fla] {_errs(runs['fla'], gold, low)}", flush=True)
        except Exception as exc:  # noqa: BLE001 (FLA 0.6.0 crashed on seed 3201 with an illegal access)
            print(f"[fla] {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}", flush=True)
            return
        finally:
            fz.PEER = "jagattn"
    # where the errors of --where sit (first dim: tokens for dq/dk/dv/dg/dbeta)
    name = args.where
    lengths = [int(x) for x in desc.split("lengths=[")[1].split("]")[0].split(",") if x.strip()]
    starts = [sum(lengths[:i]) for i in range(len(lengths))]
    g = gold[name].double()
    e_low = (low[name].double() - g).abs()
    print(
        f"\n{name}: gold shape {tuple(g.shape)} rms {g.pow(2).mean().sqrt():.3e}; reference-run err max {e_low.max():.3e}"
    )
    for label, got in runs.items():
        e = (got[name].double() - g).abs()
        flat = e.reshape(e.shape[0], -1)
        top = flat.reshape(-1).topk(min(args.top, flat.numel()))
        print(f"[{label}] top errors:")
        for val, idx in zip(top.values.tolist(), top.indices.tolist(), strict=True):
            tok, col = divmod(idx, flat.shape[1])
            if name.startswith("dh0") or name == "final_state":
                print(f"  [{tok}, {col}] err {val:.3e} gold {g.reshape(flat.shape)[tok, col]:.3e}")
                continue
            seq = max((i for i, s in enumerate(starts) if s <= tok and lengths[i] > 0), default=0)
            pos = tok - starts[seq]
            print(
                f"  token {tok} (seq {seq} pos {pos} chunk {pos // BT} row {pos % BT}) col {col}: err {val:.3e}"
                f" ref-run err {e_low.reshape(flat.shape)[tok, col]:.3e} gold {g.reshape(flat.shape)[tok, col]:.3e}"
            )
        if name not in ("dh0", "final_state"):
            per_seq = []
            for i, (s, n) in enumerate(zip(starts, lengths, strict=True)):
                if n:
                    per_seq.append(
                        f"seq{i}: {flat[s : s + n].max():.2e} (ref {e_low.reshape(flat.shape)[s : s + n].max():.2e})"
                    )
            print("  per sequence max:", "; ".join(per_seq))


if __name__ == "__main__":
    main()
