"""Device probe for three gated delta questions of issue 6 (one process, ~2 min on an H200):

1. ``l2norm``: rows per program x warps of the q/k normalisation kernels (forward, backward) on the
   benchmark shape ``[32768, 16, 128]`` bf16 (dy fp32, as the chunk backward gives it), in GB/s.
2. recurrent vs chunked forward without gradients (scalar g, and per-key gk): the crossover in
   average sequence length that ``backends.RECURRENT_MAX_AVG_LEN`` encodes, at 64 and 2048
   sequences, H=HV=16, K=V=128, bf16, with initial and final state (decoding-style calls).
3. per-key gates: forward and forward+backward of the gk kernels against the scalar-g kernels on
   H16 8 x 4096 (``gk``), and the per-kernel time of one gk forward + backward (``gk_kernels``).

Every timing is ``triton.testing.do_bench`` median (ms). Results print and go to ``--out`` as JSON.
Run: ``PYTHONPATH=src python3 benchmarks/gated_delta_probe.py --out $OUT/probe.json``.
"""

from __future__ import annotations

import argparse
import json

import torch
import torch.nn.functional as F
import triton

from jagattn.gated_delta import ops
from jagattn.gated_delta.triton import l2norm

DEV = "cuda"
BF16 = torch.bfloat16


def bench(fn) -> float:
    return triton.testing.do_bench(fn, warmup=5, rep=25, return_mode="median")


def probe_l2norm(res: dict) -> None:
    gen = torch.Generator(device=DEV).manual_seed(0)
    x = torch.randn(32768, 16, 128, device=DEV, dtype=BF16, generator=gen)
    dy = torch.randn(32768, 16, 128, device=DEV, dtype=torch.float32, generator=gen)
    ref_y = l2norm.l2norm_fwd(x)
    ref_dx = l2norm.l2norm_bwd(x, dy)
    out = []
    saved = l2norm.ROW_ELEMS, l2norm.WARPS
    for elems in (2048, 4096, 8192, 16384):
        for warps in (2, 4, 8):
            l2norm.ROW_ELEMS, l2norm.WARPS = elems, warps
            y = l2norm.l2norm_fwd(x)
            dx = l2norm.l2norm_bwd(x, dy)
            same = bool(torch.equal(y, ref_y) and torch.equal(dx, ref_dx))
            tf = bench(lambda: l2norm.l2norm_fwd(x))
            tb = bench(lambda: l2norm.l2norm_bwd(x, dy))
            gbf = 2 * x.numel() * 2 / tf / 1e6
            gbb = (2 * x.numel() * 2 + dy.numel() * 4) / tb / 1e6
            row = {"row_elems": elems, "warps": warps, "fwd_ms": tf, "bwd_ms": tb, "fwd_GBs": gbf,
                   "bwd_GBs": gbb, "bitwise_equal_to_default": same}  # fmt: skip
            out.append(row)
            print(f"l2norm elems {elems:5d} warps {warps}: fwd {tf:.4f} ms ({gbf:5.0f} GB/s) "
                  f"bwd {tb:.4f} ms ({gbb:5.0f} GB/s) same={same}", flush=True)  # fmt: skip
    l2norm.ROW_ELEMS, l2norm.WARPS = saved
    res["l2norm"] = out


def _inputs(n: int, avg: int, per_key: bool, seed: int = 0):
    gen = torch.Generator(device=DEV).manual_seed(seed)
    t = n * avg
    h = 16
    q = torch.randn(t, h, 128, device=DEV, dtype=BF16, generator=gen)
    k = torch.randn(t, h, 128, device=DEV, dtype=BF16, generator=gen)
    v = torch.randn(t, h, 128, device=DEV, dtype=BF16, generator=gen)
    g = F.logsigmoid(torch.randn(t, h, device=DEV, generator=gen))
    beta = torch.sigmoid(torch.randn(t, h, device=DEV, generator=gen)).to(BF16)
    gk = F.logsigmoid(torch.randn(t, h, 128, device=DEV, generator=gen)) / 16 if per_key else None
    h0 = torch.randn(n, h, 128, 128, device=DEV, generator=gen) * 0.1
    cu = torch.arange(0, t + 1, avg, device=DEV, dtype=torch.int32)
    return q, k, v, g, beta, gk, h0, cu


def _crossover_one(n: int, avg: int, per_key: bool) -> dict:
    q, k, v, g, beta, gk, h0, cu = _inputs(n, avg, per_key)
    scale = 128**-0.5

    def rec():
        return ops.gated_delta_fwd_recurrent(q, k, v, g, beta, gk, h0, cu, scale, True)

    def chunk():
        if per_key:
            return ops.gated_delta_fwd_gk(q, k, v, g, beta, gk, h0, cu, scale, True)
        return ops.chunked_fwd(q, k, v, g, beta, h0, cu, scale, True)

    a, b = rec(), chunk()
    diff = max(float((a[i].float() - b[i].float()).abs().max()) for i in range(2))
    tr, tc = bench(rec), bench(chunk)
    return {
        "per_key": per_key,
        "seqs": n,
        "avg_len": avg,
        "recurrent_ms": tr,
        "chunked_ms": tc,
        "max_abs_diff": diff,
    }


def probe_crossover(res: dict) -> None:
    out = []
    for per_key in (False, True):
        for n in (64, 2048):
            for avg in (1, 2, 4, 8, 16, 32, 64, 128):
                if n * avg > 131072:
                    continue
                r = _crossover_one(n, avg, per_key)
                out.append(r)
                tr, tc = r["recurrent_ms"], r["chunked_ms"]
                print(
                    f"crossover gk={per_key!s:5} N={n:5d} len={avg:4d}: recurrent {tr:.4f} ms chunked "
                    f"{tc:.4f} ms ({'recurrent' if tr < tc else 'chunked'} faster) diff {r['max_abs_diff']:.2e}",
                    flush=True,
                )
    res["crossover"] = out


def _gk_one(per_key: bool) -> dict:
    import jagattn

    q, k, v, g, beta, gk, _, cu = _inputs(8, 4096, per_key)
    leaves = [x.requires_grad_() for x in (q, k, v, g, beta) + ((gk,) if per_key else ())]
    do = torch.randn_like(v)

    def fwd():
        return jagattn.gated_delta_rule(
            q, k, v, g, beta, cu_seqlens=cu, use_qk_l2norm=True, gk=gk, backend="triton"
        )[0]

    def fwd_bwd():
        torch.autograd.grad(fwd(), leaves, do)

    with torch.no_grad():
        t_inf = bench(fwd)
    tf = bench(fwd)
    tfb = bench(fwd_bwd)
    torch.cuda.reset_peak_memory_stats()
    fwd_bwd()
    peak = torch.cuda.max_memory_allocated() / 2**30
    return {"fwd_no_grad_ms": t_inf, "fwd_ms": tf, "bwd_ms": tfb - tf, "peak_GiB": peak}


def probe_gk(res: dict) -> None:
    out = {}
    for per_key in (False, True):
        key = "gk" if per_key else "scalar"
        r = out[key] = _gk_one(per_key)
        print(
            f"H16-8seqs {key:6}: fwd(no grad) {r['fwd_no_grad_ms']:.3f} fwd {r['fwd_ms']:.3f} "
            f"bwd {r['bwd_ms']:.3f} ms peak {r['peak_GiB']:.2f} GiB",
            flush=True,
        )
        torch.cuda.empty_cache()
    res["gk_vs_scalar"] = out


def probe_gk_kernels(res: dict) -> None:
    """Per-kernel CUDA time (ms, mean of 3) of one gk forward + backward on H16 8 x 4096, for the
    default key tiles of ``kkt`` / ``dqk`` and for wider ones (outputs compared with the default's)."""
    from jagattn.gated_delta.triton import chunk_gk

    base = None
    res["gk_kernels"] = {}
    for kkt_bk, dqk_bk in ((chunk_gk.KKT_BK, chunk_gk.DQK_BK), (32, 32), (64, 64)):
        saved = chunk_gk.KKT_BK, chunk_gk.DQK_BK
        chunk_gk.KKT_BK, chunk_gk.DQK_BK = kkt_bk, dqk_bk
        try:
            out, grads = _gk_kernels_one()
        finally:
            chunk_gk.KKT_BK, chunk_gk.DQK_BK = saved
        if base is None:
            base = grads
        diff = max(
            float((a.float() - b.float()).abs().max() / b.float().abs().max().clamp_min(1e-30))
            for a, b in zip(grads, base, strict=True)
        )
        key = f"kkt_bk={kkt_bk},dqk_bk={dqk_bk}"
        print(f"gk tiles {key}: total {out['total']:.3f} ms, max rel diff of o/grads to default {diff:.2e}")
        for name, ms in out.items():
            print(f"gk kernels [{key}] {ms:8.3f} ms {name}", flush=True)
        res["gk_kernels"][key] = {"kernels": out, "max_rel_diff_to_default": diff}
        torch.cuda.empty_cache()


def _gk_kernels_one():
    from gated_delta_triton import kernel_times

    import jagattn

    q, k, v, g, beta, gk, _, cu = _inputs(8, 4096, True)
    leaves = [x.requires_grad_() for x in (q, k, v, g, beta, gk)]
    do = torch.randn_like(v)

    def step():
        o = jagattn.gated_delta_rule(
            q, k, v, g, beta, cu_seqlens=cu, use_qk_l2norm=True, gk=gk, backend="triton"
        )[0]
        return (o,) + torch.autograd.grad(o, leaves, do)

    grads = step()
    out = kernel_times(step, 3, 80)
    out = dict(sorted(out.items(), key=lambda kv: -kv[1]))
    out["total"] = sum(out.values())
    return out, grads


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ap.add_argument("--only", default="l2norm,crossover,gk")
    args = ap.parse_args()
    res = {"torch": torch.__version__, "triton": triton.__version__, "gpu": torch.cuda.get_device_name()}
    for part in args.only.split(","):
        {
            "l2norm": probe_l2norm,
            "crossover": probe_crossover,
            "gk": probe_gk,
            "gk_kernels": probe_gk_kernels,
        }[part](res)
        torch.cuda.empty_cache()
        if args.out:
            with open(args.out, "w") as f:
                json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
