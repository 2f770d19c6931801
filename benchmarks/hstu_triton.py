"""Quick timing of the BENCHMARKS.md hstu rows, jagattn's Triton backend alone (not the bench CLI)."""

import json
import math
import os
import random
import sys

import torch
import triton
from triton.testing import do_bench

import jagattn
from jagattn.hstu.reference import hstu_mask

H, D = 4, 128
ALPHA = 1.0 / 128
OUT = os.environ.get("OUT", ".")


def lengths(kind, B, N, seed):
    rng = random.Random(seed)
    if kind == "uniform":
        return [rng.randint(int(0.9 * N), N - 1) for _ in range(B)]
    # recsys: lognormal, median N/8, sigma 1, capped at N
    return [max(1, min(N, int(rng.lognormvariate(math.log(N / 8), 1.0)))) for _ in range(B)]


ROWS = [
    ("B=256 N=1024", 256, 1024, "uniform", 0, 0),
    ("B=128 N=2048", 128, 2048, "uniform", 0, 0),
    ("B=64 N=4096", 64, 4096, "uniform", 0, 0),
    ("recsys B=256 N=4096", 256, 4096, "recsys", 0, 0),
    ("C=6 W=256 B=128 N=2048", 128, 2048, "uniform", 6, 256),
]
only = sys.argv[1:]
results = []
for name, B, N, kind, C, W in ROWS:
    if only and not any(o in name for o in only):
        continue
    lens = lengths(kind, B, N, seed=B + N)
    rng = random.Random(1)
    nt_list = [min(n, rng.randint(1, 20)) for n in lens]
    L = sum(lens)
    g = torch.Generator(device="cuda").manual_seed(0)
    q = torch.randn(L, H, D, device="cuda", dtype=torch.bfloat16, generator=g)
    k = torch.randn(L, H, D, device="cuda", dtype=torch.bfloat16, generator=g)
    v = torch.randn(L, H, D, device="cuda", dtype=torch.bfloat16, generator=g)
    do = torch.randn(L, H, D, device="cuda", dtype=torch.bfloat16, generator=g)
    cu = torch.tensor([0] + list(torch.tensor(lens).cumsum(0).tolist()), device="cuda", dtype=torch.int32)
    nt = torch.tensor(nt_list, device="cuda", dtype=torch.int32)
    kw = dict(alpha=ALPHA, num_targets=nt, contextual_seq_len=C, max_attn_len=W, backend="triton")
    P = 0
    for n, t in zip(lens, nt_list):
        P += int(hstu_mask(n, num_targets=t, contextual_seq_len=C, max_attn_len=W, device="cuda").sum())
    P_peer = sum(n * n / 2 for n in lens)
    fwd_flops = 2 * (D + D) * H
    bwd_flops = 2 * (3 * D + 2 * D) * H

    def fwd():
        with torch.no_grad():
            return jagattn.hstu_attention(q, k, v, cu, N, **kw)

    qg, kg, vg = (t.clone().requires_grad_(True) for t in (q, k, v))

    def fwd_bwd(det):
        o = jagattn.hstu_attention(qg, kg, vg, cu, N, deterministic=det, **kw)
        o.backward(do)

    row = dict(name=name, L=L, P_exact=P, P_peer=P_peer, min_len=min(lens), max_len=max(lens))
    row["fwd_ms"] = do_bench(fwd, warmup=50, rep=200, return_mode="median")
    for det in (False, True):
        fwd_bwd(det)
        ms = do_bench(
            lambda: fwd_bwd(det), warmup=50, rep=300, grad_to_none=[qg, kg, vg], return_mode="median"
        )
        tag = "det" if det else "atomic"
        row[f"fwdbwd_{tag}_ms"] = ms
        row[f"bwd_{tag}_ms"] = ms - row["fwd_ms"]
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    fwd_bwd(False)
    torch.cuda.synchronize()
    row["peak_extra_MiB"] = (torch.cuda.max_memory_allocated() - base) / 2**20
    for conv, p in (("exact", P), ("peer", P_peer)):
        row[f"fwd_tflops_{conv}"] = fwd_flops * p / row["fwd_ms"] / 1e9
        for tag in ("atomic", "det"):
            row[f"bwd_{tag}_tflops_{conv}"] = bwd_flops * p / row[f"bwd_{tag}_ms"] / 1e9
    from jagattn.hstu.reference import hstu_reference
    from jagattn.hstu.triton import bwd as tb
    from jagattn.hstu.triton import fwd as tf
    from jagattn.testing import check_close

    row["configs"] = {
        name_: str(getattr(kern, "best_config", None))
        for name_, kern in (
            ("fwd", tf._fwd_small),
            ("dq", tf._dq_small),
            ("bwd_atomic", tb._bwd_small_atomic),
            ("bwd", tb._bwd_small),
        )
    }
    # correctness at the tuned configs: the first 3 sequences, same max_seq_len (same autotune key)
    e = int(cu[3])
    qs, ks, vs = (t[:e].clone().requires_grad_(True) for t in (q, k, v))
    for det in (False, True):
        o = jagattn.hstu_attention(qs, ks, vs, cu[:4], N, deterministic=det, **{**kw, "num_targets": nt[:3]})
        got = (o, *torch.autograd.grad(o, (qs, ks, vs), do[:e]))
        ref_kw = dict(alpha=ALPHA, scale_len=N, num_targets=nt[:3], contextual_seq_len=C, max_attn_len=W)
        q64, k64, v64 = (t.detach().double().requires_grad_(True) for t in (qs, ks, vs))
        gold = hstu_reference(q64, k64, v64, cu[:4], **ref_kw)
        gold = (gold, *torch.autograd.grad(gold, (q64, k64, v64), do[:e].double()))
        ql, kl, vl = (t.detach().clone().requires_grad_(True) for t in (qs, ks, vs))
        lowp = hstu_reference(ql, kl, vl, cu[:4], compute_dtype=torch.bfloat16, **ref_kw)
        lowp = (lowp, *torch.autograd.grad(lowp, (ql, kl, vl), do[:e]))
        for nm, a, gg, lp in zip(("o", "dq", "dk", "dv"), got, gold, lowp):
            try:
                err = check_close(nm, a, gg, lp)
                row[f"check_{nm}_{det}"] = f"ok {err}"
            except AssertionError as exc:
                row[f"check_{nm}_{det}"] = f"FAIL {exc}"
                print("CHECK FAIL", name, det, exc, flush=True)
    print("  configs", row["configs"], flush=True)
    results.append(row)
    print(
        f"{name:26s} L={L:7d} fwd {row['fwd_ms']:.3f} ms ({row['fwd_tflops_peer']:.0f} TF peer-conv, "
        f"{row['fwd_tflops_exact']:.0f} exact) | bwd atomic {row['bwd_atomic_ms']:.3f} ms "
        f"({row['bwd_atomic_tflops_peer']:.0f} TF peer) | bwd det {row['bwd_det_ms']:.3f} ms "
        f"({row['bwd_det_tflops_peer']:.0f} TF peer) | peak +{row['peak_extra_MiB']:.0f} MiB",
        flush=True,
    )
    del q, k, v, do, qg, kg, vg

env = dict(gpu=torch.cuda.get_device_name(), torch=torch.__version__, triton=triton.__version__, rows=results)
with open(os.path.join(OUT, "hstu_bench.json"), "w") as f:
    json.dump(env, f, indent=1)
print(json.dumps({k: v for k, v in env.items() if k != "rows"}))
