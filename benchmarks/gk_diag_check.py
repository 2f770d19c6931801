"""Device check of launch settings of the gk kernels (session 37): per setting of ``chunk_gk.{KKT,DQK}_WARPS`` /
``{KKT,DQK}_BK`` (and optionally exact fp32 products), run one bf16 forward+backward on H16 8 x 4096 with strong
per-key gates three times and report

- determinism: whether the three runs are bitwise equal (o and every gradient);
- the max relative difference (max |a - b| / max |b|, worst tensor) of o and of the gradients to the first
  setting (``base``: the launch settings before session 37, 8 warps, 16 / 32 key columns);
- forward and forward+backward medians (``do_bench``).

Session 37's rounds 4-7 (results ``2026-11-27-s37-h200-round{4..7}``) ran this script at commits 01c54b8 ..
a462ed3, with settings of the diagonal-dot switches (``KKT_DIAG_DOTS`` / ``DQK_DIAG_DOTS``) that are gone since:
the dqk dots became the only dqk path, the kkt dots were dropped.

Usage (GPU machine): ``PYTHONPATH=src python3 benchmarks/gk_diag_check.py --out $OUT [--only base,2w]``.
"""

from __future__ import annotations

import argparse
import json
import os

os.environ.setdefault("JAGATTN_AUTOTUNE", "0")

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import triton  # noqa: E402

import jagattn  # noqa: E402
from jagattn.gated_delta.triton import chunk_gk  # noqa: E402

_BASE = dict(KKT_WARPS=8, DQK_WARPS=8, KKT_BK=16, DQK_BK=32)
SETTINGS = {
    "base": _BASE,
    "4w": {**_BASE, "KKT_WARPS": 4, "DQK_WARPS": 4},  # the default since session 37
    "kkt2w": {**_BASE, "KKT_WARPS": 2, "DQK_WARPS": 4},
    "kkt2w-kkt32": {**_BASE, "KKT_WARPS": 2, "DQK_WARPS": 4, "KKT_BK": 32},
    "4w-ieee": {**_BASE, "KKT_WARPS": 4, "DQK_WARPS": 4, "dot_precision": lambda dtype: "ieee"},
    # not yet run (next session): the other gk launches at 4 warps too (WARPS: wu, h, o, dv_local, dhu; WY_WARPS)
    "4w-all": {**_BASE, "KKT_WARPS": 4, "DQK_WARPS": 4, "WARPS": 4, "WY_WARPS": 4},
    "4w-wy4": {**_BASE, "KKT_WARPS": 4, "DQK_WARPS": 4, "WY_WARPS": 4},
    "4w-kkt32": {**_BASE, "KKT_WARPS": 4, "DQK_WARPS": 4, "KKT_BK": 32},
    # session 38: the 2-warp kkt is the default; one warp (as the scalar-g kkt_solve)
    "kkt1w": {**_BASE, "KKT_WARPS": 1, "DQK_WARPS": 4},
    # dqk over 64 key columns (session 38 round 4 ran it, and "hoist": the opt-in switch DQK_HOIST of commit
    # 91b1fa8, the only dqk form since)
    "dqk64": {**_BASE, "KKT_WARPS": 2, "DQK_WARPS": 4, "DQK_BK": 64},
    # prepared in session 38, not run: the defaults since (kkt 2 warps, dqk 4) and the state passes' V block
    # (h, dhu: BV_SEQ, 32 since session 9) at 64; the chunk-parallel launches' (WARPS) at 4 with it
    "s38": {**_BASE, "KKT_WARPS": 2, "DQK_WARPS": 4},
    "bvseq64": {**_BASE, "KKT_WARPS": 2, "DQK_WARPS": 4, "BV_SEQ": 64},
    "bvseq64-4w": {**_BASE, "KKT_WARPS": 2, "DQK_WARPS": 4, "BV_SEQ": 64, "WARPS": 4},
}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=".")
    ap.add_argument("--only", default=",".join(SETTINGS))
    ap.add_argument("--lens", default="4096,4096,4096,4096,4096,4096,4096,4096")
    ap.add_argument(
        "--profile", action="store_true", help="also: CUDA time per kernel of the defaults (fwd+bwd)"
    )
    a = ap.parse_args()
    gen = torch.Generator().manual_seed(5)
    lens = [int(x) for x in a.lens.split(",")]
    t, h, d, dev, bf = sum(lens), 16, 128, "cuda", torch.bfloat16

    def rnd(*shape):
        return torch.randn(*shape, generator=gen).to(dev)

    q, k, v = (rnd(t, h, d).to(bf) for _ in range(3))
    g = F.logsigmoid(rnd(t, h))
    beta = torch.sigmoid(rnd(t, h)).to(bf)
    gk = F.logsigmoid(rnd(t, h, d) + 1.0) / 4  # stronger than the benchmark's /16
    cu = torch.tensor([0] + torch.tensor(lens).cumsum(0).tolist(), dtype=torch.int32, device=dev)
    leaves = [x.requires_grad_() for x in (q, k, v, g, beta, gk)]
    do = rnd(t, h, d).to(bf)

    def call():
        return jagattn.gated_delta_rule(
            q, k, v, g, beta, cu_seqlens=cu, use_qk_l2norm=True, gk=gk, backend="triton"
        )[0]

    def once():
        for x in leaves:
            x.grad = None
        o = call()
        o.backward(do)
        return [o.detach().clone()] + [x.grad.clone() for x in leaves]

    def rel(xs, ys):
        return max(
            float((x.float() - y.float()).abs().max() / y.float().abs().max().clamp_min(1e-30))
            for x, y in zip(xs, ys, strict=True)
        )

    res = {"torch": torch.__version__, "triton": triton.__version__, "device": torch.cuda.get_device_name()}
    base = None
    for name in a.only.split(","):
        saved = {key: getattr(chunk_gk, key) for key in SETTINGS[name]}
        for key, val in SETTINGS[name].items():
            setattr(chunk_gk, key, val)
        try:
            runs = [once() for _ in range(3)]
            det = all(torch.equal(x, y) for r in runs[1:] for x, y in zip(r, runs[0], strict=True))
            if base is None:
                base = runs[0]
            with torch.no_grad():
                tf = triton.testing.do_bench(call, return_mode="median")
            tfb = triton.testing.do_bench(
                lambda: call().backward(do), grad_to_none=leaves, return_mode="median"
            )
            rec = {
                "deterministic": det,
                "o_rel_to_base": rel(runs[0][:1], base[:1]),
                "grads_rel_to_base": rel(runs[0][1:], base[1:]),
                "run_to_run_rel": rel(runs[1], runs[0]),
                "fwd_ms": tf,
                "bwd_ms": tfb - tf,
            }
        except Exception as e:  # noqa: BLE001 - a compile/launch failure is a result here
            rec = {"error": f"{type(e).__name__}: {str(e)[:300]}"}
        finally:
            for key, val in saved.items():
                setattr(chunk_gk, key, val)
        res[name] = rec
        print(name, json.dumps(rec), flush=True)
        with open(os.path.join(a.out, "gk_diag_check.json"), "w") as f:
            json.dump(res, f, indent=1)
    if a.profile:
        _profile(call, do, leaves)


def _profile(call, do, leaves, reps: int = 5) -> None:
    """CUDA time per kernel, ms per forward + backward call, with the module's current (default) settings."""
    for _ in range(2):
        call().backward(do)
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(reps):
            for x in leaves:
                x.grad = None
            call().backward(do)
        torch.cuda.synchronize()
    rows = [(e.key, e.device_time_total / 1e3 / reps, e.count // reps) for e in prof.key_averages()]
    rows = [r for r in rows if r[1] > 0]
    rows.sort(key=lambda r: -r[1])
    print(f"profile: {sum(r[1] for r in rows):.3f} ms of kernels per forward + backward", flush=True)
    for key, ms, n in rows[:25]:
        print(f"  {ms:8.3f} ms  x{n:<3d} {key[:90]}", flush=True)


if __name__ == "__main__":
    main()
