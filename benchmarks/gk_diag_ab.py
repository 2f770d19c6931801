"""Same-process A/B of the per-key-gate (gk) kernels' diagonal 16-row blocks (session 37):

- ``default``: the library's setting (``chunk_gk.DIAG_DOTS``);
- ``dots`` / ``loop``: ``DIAG_DOTS`` forced on / off (tensor-core dots over four pairing levels, or the
  column loop ``_diag_ap`` / ``_diag_bwd`` stopping at the sequence's end);
- ``full16``: the column loop over all 16 rows, as before session 37 (rows past ``eos`` add zeros).

Per variant: bitwise equality with ``default`` and the max relative difference (max |a - b| / max |b|
per tensor, worst of o and the six gradients).

Rows (bf16, H16, K=V=128, l2norm, gk on, scalar g on):
- ``8x4096``: full chunks only (the loop bound's cost where it cannot skip anything);
- ``short``: 1024 sequences of 1..63 tokens (every chunk partial: the skip's best case);
- ``ragged``: 256 sequences of 1..255 tokens.

Usage (GPU machine): ``PYTHONPATH=src python3 benchmarks/gk_diag_ab.py --out $OUT``.
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


def _flag(value: bool):
    import importlib

    m = importlib.import_module(MOD)
    saved = []
    return (
        lambda: (saved.append(m.DIAG_DOTS), setattr(m, "DIAG_DOTS", value)),
        lambda: setattr(m, "DIAG_DOTS", saved.pop()),
    )


DOTS = Variant("dots", [_flag(True)])
LOOP = Variant("loop", [_flag(False)])
FULL16 = Variant(
    "full16", [_flag(False), (MOD, "_diag_ap", NEW, "range(16)"), (MOD, "_diag_bwd", NEW, "range(16)")]
)


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
            f"bitwise={rec['bitwise_equal_to_default']} rel={rec['max_rel_diff_to_default']:.2e}",
            flush=True,
        )
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=".")
    ap.add_argument("--rows", default="8x4096,short,ragged")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--variants", default="dots,loop,full16")
    a = ap.parse_args()
    variants = [DEFAULT] + [v for v in (DOTS, LOOP, FULL16) if v.name in a.variants.split(",")]
    for v in variants:
        reason = v.check()
        if reason:
            raise SystemExit(f"variant {v.name} does not apply: {reason}")
    res = {"torch": torch.__version__, "device": torch.cuda.get_device_name()}
    for row in a.rows.split(","):
        res[row] = run_row(row, variants, a.repeats)
        with open(os.path.join(a.out, "gk_diag_ab.json"), "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
