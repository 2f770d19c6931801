"""Same-process A/B of the per-key-gate (gk) kernels' diagonal-block loops: the default stops each
``_diag_ap`` / ``_diag_bwd`` 16-row loop at the sequence's end (session 37); the ``full16`` variant runs
all 16 rows as before (rows past ``eos`` add exact zeros). Outputs and gradients must be bitwise equal.

Rows (bf16, H16, K=V=128, l2norm, gk on, scalar g on):
- ``8x4096``: full chunks only (the loop bound's cost where it cannot skip anything);
- ``short``: 1024 sequences of 1..63 tokens (every chunk partial: the skip's best case);
- ``ragged``: 256 sequences of 1..255 tokens.

Usage (GPU machine): ``PYTHONPATH=src python3 benchmarks/gk_diag_skip_ab.py --out $OUT``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

os.environ.setdefault("JAGATTN_AUTOTUNE", "0")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from src_variant_ab import DEFAULT, Variant, bench_ms  # noqa: E402

import jagattn  # noqa: E402

MOD = "jagattn.gated_delta.triton.chunk_gk"
NEW = "range(tl.minimum(eos - row0 - b * 16, 16))"
FULL16 = Variant("full16", [(MOD, "_diag_ap", NEW, "range(16)"), (MOD, "_diag_bwd", NEW, "range(16)")])


def _lengths(row: str, gen: torch.Generator) -> list[int]:
    if row == "8x4096":
        return [4096] * 8
    if row == "short":
        return torch.randint(1, 64, (1024,), generator=gen).tolist()
    return torch.randint(1, 256, (256,), generator=gen).tolist()


def run_row(row: str, variants: list[Variant], repeats: int) -> dict:
    gen = torch.Generator().manual_seed(3)
    lens = _lengths(row, gen)
    t, h, d = sum(lens), 16, 128
    dev, bf = "cuda", torch.bfloat16

    def rnd(*shape):
        return torch.randn(*shape, generator=gen).to(dev)

    q, k, v = (rnd(t, h, d).to(bf) for _ in range(3))
    g = F.logsigmoid(rnd(t, h))
    beta = torch.sigmoid(rnd(t, h)).to(bf)
    gk = F.logsigmoid(rnd(t, h, d)) / 16
    cu = torch.tensor([0] + torch.tensor(lens).cumsum(0).tolist(), dtype=torch.int32, device=dev)
    leaves = [x.requires_grad_() for x in (q, k, v, g, beta, gk)]
    do = rnd(t, h, d).to(bf)

    def call():
        return jagattn.gated_delta_rule(
            q, k, v, g, beta, cu_seqlens=cu, use_qk_l2norm=True, gk=gk, backend="triton"
        )[0]

    def fwd():
        with torch.no_grad():
            return call()

    def fwd_bwd():
        call().backward(do)

    out = {"tokens": t, "seqs": len(lens), "variants": {}}
    ref = None
    for var in variants:
        with var:
            for x in leaves:
                x.grad = None
            o = call()
            o.backward(do)
            res = [o.detach()] + [x.grad.clone() for x in leaves]
        if ref is None:
            ref = res
        out["variants"][var.name] = {
            "bitwise_equal_to_default": all(torch.equal(a, b) for a, b in zip(res, ref, strict=True))
        }
    for _ in range(repeats):
        for var in variants:
            with var:
                tf = bench_ms(fwd)
                tfb = bench_ms(fwd_bwd, leaves)
            rec = out["variants"][var.name]
            rec.setdefault("fwd_ms", []).append(tf)
            rec.setdefault("bwd_ms", []).append(tfb - tf)
    for name, rec in out["variants"].items():
        rec["fwd_ms_min"] = min(rec["fwd_ms"])
        rec["bwd_ms_min"] = min(rec["bwd_ms"])
        print(
            f"{row:7} {name:8} fwd {rec['fwd_ms_min']:.3f} bwd {rec['bwd_ms_min']:.3f} ms "
            f"bitwise={rec['bitwise_equal_to_default']}",
            flush=True,
        )
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=".")
    ap.add_argument("--rows", default="8x4096,short,ragged")
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    reason = FULL16.check()
    if reason:
        raise SystemExit(f"variant does not apply: {reason}")
    res = {"torch": torch.__version__, "device": torch.cuda.get_device_name()}
    for row in a.rows.split(","):
        res[row] = run_row(row, [DEFAULT, FULL16], a.repeats)
        with open(os.path.join(a.out, "gk_diag_skip_ab.json"), "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
