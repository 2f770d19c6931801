"""BENCHMARKS.md hstu rows: jagattn's Triton backend and generative-recommenders' Triton HSTU, same run.

Usage on the GPU machine (from the repository root, ``peers/gr`` carried)::

    PYTHONPATH=src:peers/gr python3 benchmarks/hstu_triton.py [--sweep] [--workers 12] [ROW-SUBSTRING ...]

Per row, on the same inputs and the same ``max_seq_len = N``: forward (no grad), forward+backward
(``bwd = fwd+bwd - fwd``) and the peak extra memory of one forward+backward, for jagattn (public
``hstu_attention(backend="triton")`` with each dQ path: ``atomic``, the opt-in fp32 atomics, and
``det``, the dQ kernel that is the default; ``ops.ATOMIC_DQ_DEFAULT`` is set for each) and for GR
(``triton_hstu_mha`` with ``set_use_runtime_max_seq_len(True)``, its autotune lists restricted as in
the bench adapter: ``JAGATTN_GR_EXCLUDE``). ``--gr-only`` / ``--gr-json`` time GR in a process of its
own; ``--quick`` skips the A/B timings of the packed scores and the schedules. ``--sweep`` also times every
candidate kernel config on its own (kernel time only) to choose the tuning tables. ``--workers N``
compiles the kernels in N processes first (Triton's on-disk cache is shared), which is only a
compile-time saving. Results go to ``$OUT/hstu_bench.json``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import random
import subprocess
import sys
import time

import torch
import triton
from triton.testing import do_bench as _do_bench

import jagattn
from jagattn.hstu import ops as hstu_ops
from jagattn.hstu.reference import hstu_mask, hstu_reference
from jagattn.hstu.triton import bwd as tb
from jagattn.hstu.triton import fwd as tf
from jagattn.hstu.triton import schedule as sched
from jagattn.testing import check_close

H, D = 4, 128
ALPHA = 1.0 / 128
OUT = os.environ.get("OUT", ".")
# HSTU_BENCH_DEVICE=cpu (with TRITON_INTERPRET=1 and --tiny): a dry run of this script's Python, no timing
DEV = os.environ.get("HSTU_BENCH_DEVICE", "cuda")
CUDA = DEV == "cuda"
QUICK = False


def do_bench(fn, warmup, rep, grad_to_none=None, return_mode="median"):
    if CUDA:
        return _do_bench(fn, warmup=warmup, rep=rep, grad_to_none=grad_to_none, return_mode=return_mode)
    t0 = time.perf_counter()
    fn()
    return (time.perf_counter() - t0) * 1e3


def sync():
    if CUDA:
        torch.cuda.synchronize()


ROWS = [
    ("B=256 N=1024", 256, 1024, "uniform", 0, 0),
    ("B=128 N=2048", 128, 2048, "uniform", 0, 0),
    ("B=64 N=4096", 64, 4096, "uniform", 0, 0),
    ("C=6 W=256 B=128 N=2048", 128, 2048, "uniform", 6, 256),
    ("recsys B=128 N=2048", 128, 2048, "recsys", 0, 0),
]

# Sweep candidates (BLOCK_M, BLOCK_N, num_warps, num_stages) for D = 128.
SWEEP = {
    "fwd": [
        (128, 32, 4, 3),
        (128, 32, 4, 2),
        (128, 64, 4, 2),
        (128, 64, 8, 2),
        (128, 64, 8, 3),
        (128, 128, 8, 2),
        (128, 32, 8, 3),
        (64, 64, 4, 3),
        (64, 64, 4, 2),
        (64, 32, 4, 3),
        (64, 128, 4, 2),
        (128, 64, 8, 4),
        (64, 64, 8, 3),
        (128, 128, 8, 3),
        (128, 32, 4, 4),
    ],
    "bwd_atomic": [
        (64, 128, 8, 3),
        (64, 128, 8, 2),
        (32, 128, 8, 2),
        (32, 128, 8, 3),
        (64, 64, 4, 2),
        (64, 64, 4, 3),
        (32, 64, 4, 3),
        (32, 64, 4, 2),
        (64, 64, 8, 2),
        (32, 128, 4, 2),
        (16, 128, 8, 2),
        (32, 64, 8, 3),
        (64, 128, 8, 1),
    ],
    "bwd_plain": [
        (64, 128, 8, 3),
        (64, 128, 8, 2),
        (32, 128, 8, 2),
        (32, 128, 8, 3),
        (64, 64, 4, 2),
        (64, 64, 4, 3),
        (32, 64, 4, 3),
        (64, 64, 8, 2),
    ],
    "dq": [
        (128, 64, 8, 2),
        (128, 64, 8, 3),
        (64, 64, 4, 2),
        (64, 64, 4, 3),
        (128, 32, 4, 3),
        (64, 128, 4, 2),
        (128, 32, 8, 3),
        (64, 32, 4, 3),
        (128, 128, 8, 2),
    ],
}


def lengths(kind, B, N, seed):
    rng = random.Random(seed)
    if kind == "uniform":
        return [rng.randint(int(0.9 * N), N - 1) for _ in range(B)]
    # recsys (as the CLI's hstu/recsys row): lognormal, median N/8, sigma 1, in [2, N]
    return [max(2, min(N, int(rng.lognormvariate(math.log(N / 8), 1.0)))) for _ in range(B)]


def make_row(B, N, kind, small=False):
    lens = lengths(kind, B, N, seed=B + N)
    if small:  # same specialisation (B, N multiples of 16), few tokens: compile warm-up only
        lens = [min(n, 200) for n in lens[:16]]
    rng = random.Random(1)
    nt_list = [min(n, rng.randint(1, 20)) for n in lens]
    L = sum(lens)
    g = torch.Generator(device=DEV).manual_seed(0)
    q, k, v, do = (torch.randn(L, H, D, device=DEV, dtype=torch.bfloat16, generator=g) for _ in range(4))
    cu = torch.tensor([0] + torch.tensor(lens).cumsum(0).tolist(), device=DEV, dtype=torch.int32)
    nt = torch.tensor(nt_list, device=DEV, dtype=torch.int32)
    return lens, nt_list, q, k, v, do, cu, nt


def cfg_dict(c):
    return dict(BLOCK_M=c[0], BLOCK_N=c[1], num_warps=c[2], num_stages=c[3])


def kernel_fns(q, k, v, do, cu, nt, N, C, W):
    """Callables that run one kernel with a pinned config (kernel time only)."""
    args = (cu, nt, N, ALPHA, 1.0 / N, C, W, 0)
    out = torch.empty_like(q)
    dk, dv = torch.empty_like(k), torch.empty_like(v)
    dq32 = torch.zeros(q.shape, dtype=torch.float32, device=q.device)

    def fwd(c):
        return lambda: tf._launch(0, q, k, v, None, out, *args, None, config=cfg_dict(c))

    def dq(c):
        return lambda: tf._launch(1, q, k, v, do, out, *args, None, config=cfg_dict(c))

    def bwd_atomic(c):
        return lambda: tb._launch_bwd(do, q, k, v, dq32, dk, dv, *args, config=cfg_dict(c))

    def bwd_plain(c):
        return lambda: tb._launch_bwd(do, q, k, v, None, dk, dv, *args, config=cfg_dict(c))

    return dict(fwd=fwd, dq=dq, bwd_atomic=bwd_atomic, bwd_plain=bwd_plain)


def gr_fn():
    """GR's ``triton_hstu_mha`` with its autotune lists restricted as in the bench adapter
    (``JAGATTN_GR_EXCLUDE``, default ``jagattn.bench.peers.GR_EXCLUDE_DEFAULT``)."""
    try:
        from generative_recommenders import common
        from generative_recommenders.ops.triton import triton_hstu_attention as mod
    except Exception as exc:  # reported in the JSON
        return None, f"{type(exc).__name__}: {exc}"
    from jagattn.bench.peers import GR_EXCLUDE_DEFAULT, restrict_gr_configs

    common.set_use_runtime_max_seq_len(True)
    spec = os.environ.get("JAGATTN_GR_EXCLUDE", GR_EXCLUDE_DEFAULT)
    GR_EXCLUDED.update(restrict_gr_configs(mod, spec), spec=spec)
    return mod.triton_hstu_mha, None


GR_EXCLUDED: dict = {}


def tuned_lists():
    """The configs the public path autotunes over (D = 128), as sweep tuples."""

    def t(cfgs):
        return [(c.kwargs["BLOCK_M"], c.kwargs["BLOCK_N"], c.num_warps, c.num_stages) for c in cfgs]

    return dict(
        fwd=t(tf._FWD_SMALL_D),
        dq=t(tf._DQ_SMALL_D),
        bwd_atomic=t(tb._BWD_SMALL_D),
        bwd_plain=t(tb._BWD_SMALL_D),
    )


def warm(part, nparts, rows, sweep):
    """Worker: compile a share of (kernel, config, flags) and GR's autotuning of a share of rows."""
    jobs = []
    flagsets = sorted({(C, W) for _, _, _, _, C, W in rows})
    lists = tuned_lists()
    if sweep:
        lists = {kind: sorted(set(lists[kind]) | set(SWEEP[kind])) for kind in lists}
    for kind, cfgs in lists.items():
        for c in cfgs:
            for C, W in flagsets:
                jobs.append(("ours", kind, c, C, W))
    for i, job in enumerate(jobs):
        if i % nparts != part:
            continue
        try:
            if job[0] == "ours":
                _, kind, c, C, W = job
                lens, _, q, k, v, do, cu, nt = make_row(256, 1024, "uniform", small=True)
                kernel_fns(q, k, v, do, cu, nt, 1024, C, W)[kind](c)()
            else:
                name, B, N, kind, C, W = job[1]
                mha, _ = gr_fn()
                if mha is None:
                    continue
                _, _, q, k, v, do, cu, nt = make_row(B, N, kind)
                qg, kg, vg = (t.clone().requires_grad_(True) for t in (q, k, v))
                mha(N, ALPHA, qg, kg, vg, cu.long(), nt.long(), W, C).backward(do)
            sync()
        except Exception as exc:
            print("warm failed", job, type(exc).__name__, str(exc)[:300], flush=True)


def peak_of(fn):
    if not CUDA:
        fn()
        return 0.0
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    fn()
    torch.cuda.synchronize()
    return (torch.cuda.max_memory_allocated() - base) / 2**20


def check_ours(q, k, v, do, cu, nt, N, C, W, row):
    """Correctness of both dQ paths at the configs in use: the first 3 sequences of the full call
    (same compile specialisation as the timed calls) against the fp64 reference, SPEC section 5 rule."""
    e = int(cu[3])
    kw = dict(alpha=ALPHA, num_targets=nt, contextual_seq_len=C, max_attn_len=W, backend="triton")
    gold = gold_of(q, k, v, do, cu, nt, N, C, W)
    ref_kw = dict(alpha=ALPHA, scale_len=N, num_targets=nt[:3], contextual_seq_len=C, max_attn_len=W)
    ql, kl, vl = (t[:e].detach().clone().requires_grad_(True) for t in (q, k, v))
    lowp = hstu_reference(ql, kl, vl, cu[:4], compute_dtype=torch.bfloat16, **ref_kw)
    lowp = (lowp, *torch.autograd.grad(lowp, (ql, kl, vl), do[:e]))
    for tag in ("atomic", "det"):
        qs, ks, vs = (t.clone().requires_grad_(True) for t in (q, k, v))
        with dq_path(tag):
            o = jagattn.hstu_attention(qs, ks, vs, cu, N, deterministic=tag == "det", **kw)
            got = [t[:e] for t in (o, *torch.autograd.grad(o, (qs, ks, vs), do))]
        for nm, a, gg, lp in zip(("o", "dq", "dk", "dv"), got, gold, lowp, strict=True):
            try:
                row[f"check_{nm}_{tag}"] = f"ok {check_close(nm, a, gg, lp)}"
            except AssertionError as exc:
                row[f"check_{nm}_{tag}"] = f"FAIL {exc}"
                print("CHECK FAIL", row["name"], tag, exc, flush=True)


@contextlib.contextmanager
def dq_path(tag):
    """``atomic``: dQ by fp32 atomics in the dK/dV kernel; ``det``: the dQ kernel (deterministic=True
    takes it anyway); whatever ``ops.ATOMIC_DQ_DEFAULT`` says for deterministic=False."""
    old = hstu_ops.ATOMIC_DQ_DEFAULT
    hstu_ops.ATOMIC_DQ_DEFAULT = tag == "atomic"
    try:
        yield
    finally:
        hstu_ops.ATOMIC_DQ_DEFAULT = old


def gr_measure(name, B, N, kind, C, W, warmup, rep):
    """GR's forward, forward+backward and peak memory on the row's inputs (same seeds as ours)."""
    mha, why = gr_fn()
    if mha is None:
        return f"n/a ({why})"
    lens, nt_list, q, k, v, do, cu, nt = make_row(B, N, kind)
    qg, kg, vg = (t.clone().requires_grad_(True) for t in (q, k, v))
    grads = [qg, kg, vg]
    cu64, nt64 = cu.long(), nt.long()

    def bench(fn, g=None):
        fn()
        return do_bench(fn, warmup=warmup, rep=rep, grad_to_none=g, return_mode="median")

    def gr_fwd():
        with torch.no_grad():
            return mha(N, ALPHA, q, k, v, cu64, nt64, W, C)

    def gr_fb():
        mha(N, ALPHA, qg, kg, vg, cu64, nt64, W, C).backward(do)

    gres = {"fwd_ms": bench(gr_fwd)}
    gres["fwdbwd_ms"] = bench(gr_fb, grads)
    gres["bwd_ms"] = gres["fwdbwd_ms"] - gres["fwd_ms"]
    for t in grads:
        t.grad = None
    gres["peak_MiB"] = peak_of(gr_fb)
    for t in grads:
        t.grad = None
    # GR's output and gradients on the first 3 sequences of the full call (a 3-sequence call would
    # be a new compile specialisation) against the fp64 reference: its correctness, not ours
    o = mha(N, ALPHA, qg, kg, vg, cu64, nt64, W, C)
    o.backward(do)
    e = int(cu[3])
    got = [o.detach()[:e], qg.grad[:e], kg.grad[:e], vg.grad[:e]]
    gold = gold_of(q, k, v, do, cu, nt, N, C, W)
    for nm, a, g in zip(("o", "dq", "dk", "dv"), got, gold, strict=True):
        d = (a.double() - g).abs()
        gres[f"{nm}_max_rel"] = float(d.max() / g.abs().max())
        gres[f"{nm}_rms_rel"] = float(d.pow(2).mean().sqrt() / g.pow(2).mean().sqrt())
    gres["gate_bf16_3e-2_1e-2"] = all(
        gres[f"{nm}_max_rel"] <= 3e-2 and gres[f"{nm}_rms_rel"] <= 1e-2 for nm in ("o", "dq", "dk", "dv")
    )
    gres["excluded_configs"] = dict(GR_EXCLUDED)
    return gres


def gold_of(q, k, v, do, cu, nt, N, C, W):
    """fp64 reference output and gradients of the first 3 sequences."""
    e = int(cu[3])
    ref_kw = dict(alpha=ALPHA, scale_len=N, num_targets=nt[:3], contextual_seq_len=C, max_attn_len=W)
    q64, k64, v64 = (t[:e].detach().double().requires_grad_(True) for t in (q, k, v))
    gold = hstu_reference(q64, k64, v64, cu[:4], **ref_kw)
    return (gold.detach(), *torch.autograd.grad(gold, (q64, k64, v64), do[:e].double()))


def bench_row(name, B, N, kind, C, W, sweep, warmup, rep, gr_results=None):
    lens, nt_list, q, k, v, do, cu, nt = make_row(B, N, kind)
    L = sum(lens)
    P = sum(
        int(hstu_mask(n, num_targets=t, contextual_seq_len=C, max_attn_len=W, device=DEV).sum())
        for n, t in zip(lens, nt_list, strict=True)
    )
    P_peer = sum(n * n / 2 for n in lens)
    fwd_fl, bwd_fl = 2 * (D + D) * H, 2 * (3 * D + 2 * D) * H
    row = dict(name=name, L=L, P_exact=P, P_peer=P_peer, min_len=min(lens), max_len=max(lens))

    def bench(fn, grads=None):
        fn()
        return do_bench(fn, warmup=warmup, rep=rep, grad_to_none=grads, return_mode="median")

    if sweep:
        fns = kernel_fns(q, k, v, do, cu, nt, N, C, W)
        row["sweep"] = {}
        for kern, cfgs in SWEEP.items():
            res = {}
            for c in cfgs:
                try:
                    res[str(c)] = bench(fns[kern](c))
                except Exception as exc:
                    res[str(c)] = f"error {type(exc).__name__}: {str(exc)[:200]}"
            row["sweep"][kern] = res
            ok = {c: t for c, t in res.items() if isinstance(t, float)}
            best = min(ok, key=ok.get) if ok else None
            print(
                f"  sweep {kern:10s} best {best} {ok.get(best, float('nan')):.3f} ms | "
                + " ".join(f"{c}:{t:.3f}" for c, t in sorted(ok.items(), key=lambda x: x[1])[:6]),
                flush=True,
            )
        del fns

    kw = dict(alpha=ALPHA, num_targets=nt, contextual_seq_len=C, max_attn_len=W, backend="triton")
    qg, kg, vg = (t.clone().requires_grad_(True) for t in (q, k, v))
    grads = [qg, kg, vg]

    def ours_fwd():
        with torch.no_grad():
            return jagattn.hstu_attention(q, k, v, cu, N, **kw)

    def ours_fb(det):
        jagattn.hstu_attention(qg, kg, vg, cu, N, deterministic=det, **kw).backward(do)

    res = {}
    res["fwd_ms"] = bench(ours_fwd)
    for det, tag in ((False, "atomic"), (True, "det")):
        with dq_path(tag):
            res[f"fwdbwd_{tag}_ms"] = bench(lambda det=det: ours_fb(det), grads)
            res[f"bwd_{tag}_ms"] = res[f"fwdbwd_{tag}_ms"] - res["fwd_ms"]
            for t in grads:
                t.grad = None
            res[f"peak_{tag}_MiB"] = peak_of(lambda det=det: ours_fb(det))
            for t in grads:
                t.grad = None
    if QUICK:
        return finish_row(row, res, q, k, v, do, cu, nt, N, C, W, gr_results, B, kind, warmup, rep,
                          fwd_fl, bwd_fl, P)  # fmt: skip
    os.environ["JAGATTN_HSTU_PACKED"] = "0"  # A/B: forward scores in fp32 instead of packed bf16x2
    try:
        res["fp32_scores_fwd_ms"] = bench(ours_fwd)
    finally:
        os.environ.pop("JAGATTN_HSTU_PACKED")
    print(f"  fwd with fp32 scores (JAGATTN_HSTU_PACKED=0): {res['fp32_scores_fwd_ms']:.3f} ms", flush=True)
    if B > 1 and 2 * L < B * N:  # A/B: the same calls with the other schedule (compact list vs dense grid)
        alt = not sched.ENABLED
        tag = "compact" if alt else "dense"
        sched.ENABLED = alt
        try:
            res[f"{tag}_fwd_ms"] = bench(ours_fwd)
            res[f"{tag}_fwdbwd_atomic_ms"] = bench(lambda: ours_fb(False), grads)
            res[f"{tag}_bwd_atomic_ms"] = res[f"{tag}_fwdbwd_atomic_ms"] - res[f"{tag}_fwd_ms"]
        finally:
            sched.ENABLED = not alt
        for t in grads:
            t.grad = None
        print(
            f"  {tag}: fwd {res[f'{tag}_fwd_ms']:.3f} bwd-atomic {res[f'{tag}_bwd_atomic_ms']:.3f} ms",
            flush=True,
        )
    return finish_row(
        row, res, q, k, v, do, cu, nt, N, C, W, gr_results, B, kind, warmup, rep, fwd_fl, bwd_fl, P
    )


def finish_row(row, res, q, k, v, do, cu, nt, N, C, W, gr_results, B, kind, warmup, rep, fwd_fl, bwd_fl, P):
    name = row["name"]
    L = row["L"]
    row["ours"] = res
    win = W > 0  # the launchers' choice of autotuner (window-ordered lists with a window; fwd.py _launch)
    fwd_kern = (
        tf._fwd_small_window if win
        else tf._fwd_small_long if tf.long_rows(N, q.dtype)
        else tf._fwd_small_short if tf.short_rows(N)
        else tf._fwd_small
    )  # fmt: skip
    row["configs"] = {
        n_: str(getattr(kern, "best_config", None))
        for n_, kern in (("fwd", fwd_kern),
                         ("dq", tf._dq_small_window if win else tf._dq_small),
                         ("bwd_atomic", tb._bwd_small_atomic), ("bwd", tb._bwd_small_window if win else tb._bwd_small))
    }  # fmt: skip

    if gr_results is not None:
        row["gr"] = gr_results.get(name, "n/a (not timed in this process)")
    else:
        try:
            row["gr"] = gr_measure(name, B, N, kind, C, W, warmup, rep)
        except Exception as exc:  # a CUDA fault ends the process at the next call anyway
            row["gr"] = f"error {type(exc).__name__}: {str(exc)[:300]}"
            print("GR ERROR", name, row["gr"], flush=True)

    for r in (row["ours"], row["gr"]):
        if not isinstance(r, dict):
            continue
        for key in [x for x in r if x.startswith("fwd") or x.startswith("bwd")]:
            if key.endswith("_ms") and not key.startswith("fwdbwd"):
                flops = fwd_fl if key.startswith("fwd") else bwd_fl
                r[key.replace("_ms", "_tflops")] = flops * P / r[key] / 1e9
    if isinstance(row["gr"], dict):
        g, o = row["gr"], row["ours"]
        row["speedup"] = dict(
            fwd=g["fwd_ms"] / o["fwd_ms"],
            bwd_atomic=g["bwd_ms"] / o["bwd_atomic_ms"],
            bwd_det=g["bwd_ms"] / o["bwd_det_ms"],
            peak_atomic_over_gr=o["peak_atomic_MiB"] / g["peak_MiB"],
            peak_det_over_gr=o["peak_det_MiB"] / g["peak_MiB"],
        )
    check_ours(q, k, v, do, cu, nt, N, C, W, row)
    o, g = row["ours"], row["gr"] if isinstance(row["gr"], dict) else {}
    print(
        f"{name:24s} L={L:6d} | ours fwd {o['fwd_ms']:.3f} ({o['fwd_tflops']:.0f} TF) bwd-atomic "
        f"{o['bwd_atomic_ms']:.3f} ({o['bwd_atomic_tflops']:.0f}) bwd-det {o['bwd_det_ms']:.3f} "
        f"({o['bwd_det_tflops']:.0f}) peak {o['peak_atomic_MiB']:.0f}/{o['peak_det_MiB']:.0f} MiB | GR fwd "
        f"{g.get('fwd_ms', float('nan')):.3f} ({g.get('fwd_tflops', float('nan')):.0f}) bwd "
        f"{g.get('bwd_ms', float('nan')):.3f} ({g.get('bwd_tflops', float('nan')):.0f}) peak "
        f"{g.get('peak_MiB', float('nan')):.0f} | speedup {json.dumps(row.get('speedup', {}))}",
        flush=True,
    )
    print("  configs", row["configs"], flush=True)
    return row


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("only", nargs="*")
    ap.add_argument("--sweep", action="store_true")
    ap.add_argument("--workers", type=int, default=0)
    ap.add_argument("--warm-part", default=None)
    ap.add_argument("--warm-only", action="store_true", help="compile in --workers processes, then exit")
    ap.add_argument("--gr-only", action="store_true", help="time GR alone, write $OUT/gr.json row by row")
    ap.add_argument("--gr-json", default=None, help="GR results from an earlier --gr-only process")
    ap.add_argument("--no-gr", action="store_true", help="do not time GR")
    ap.add_argument("--tiny", action="store_true", help="tiny rows (a dry run of the script)")
    ap.add_argument("--quick", action="store_true", help="skip the packed-scores and schedule A/B timings")
    ap.add_argument("--warmup", type=int, default=25)
    ap.add_argument("--rep", type=int, default=100)
    a = ap.parse_args()
    global QUICK
    QUICK = a.quick
    rows = [r for r in ROWS if not a.only or any(o in r[0] for o in a.only)]
    if a.tiny:  # dry run shapes (H, D stay; B and N shrink)
        rows = [(n, 4, 64, kind, C, min(W, 16)) for n, _, _, kind, C, W in rows]
    if a.warm_part:
        part, nparts = (int(x) for x in a.warm_part.split("/"))
        warm(part, nparts, rows, a.sweep)
        return
    t0 = time.time()
    if a.workers:
        cmd = [sys.executable, __file__, *a.only, *(["--sweep"] if a.sweep else [])]
        procs = [subprocess.Popen([*cmd, "--warm-part", f"{i}/{a.workers}"]) for i in range(a.workers)]
        for p in procs:
            p.wait()
        print(f"warm-up compile in {a.workers} processes: {time.time() - t0:.0f} s", flush=True)
    if a.warm_only:
        return
    if a.gr_only:
        out = {}
        for r in rows:
            try:
                out[r[0]] = gr_measure(*r, a.warmup, a.rep)
            except Exception as exc:  # recorded; a lost CUDA context fails the next rows the same way
                out[r[0]] = f"error {type(exc).__name__}: {str(exc)[:300]}"
            print("GR", r[0], json.dumps(out[r[0]]), flush=True)
            with open(os.path.join(OUT, "gr.json"), "w") as f:
                json.dump(out, f, indent=1)
        return
    gr_results = None
    if a.no_gr:
        gr_results = {}
    elif a.gr_json:
        try:
            with open(a.gr_json) as f:
                gr_results = json.load(f)
        except OSError as exc:
            gr_results = {"error": f"{exc}"}
        for r in rows:
            gr_results.setdefault(r[0], "n/a (the --gr-only process crashed before this row)")
    results = []
    for r in rows:  # the JSON is rewritten after every row: a crash keeps the rows already measured
        results.append(bench_row(*r, sweep=a.sweep, warmup=a.warmup, rep=a.rep, gr_results=gr_results))
        env = dict(
            gpu=torch.cuda.get_device_name() if CUDA else DEV, torch=torch.__version__, triton=triton.__version__,
            gr_commit=os.environ.get("JAGATTN_GR_COMMIT", ""), jagattn_sha=os.environ.get("JAGATTN_GIT_SHA", ""),
            atomic_dq_default=hstu_ops.ATOMIC_DQ_DEFAULT, command=" ".join(sys.argv), seconds=time.time() - t0,
            rows=results,
        )  # fmt: skip
        with open(os.path.join(OUT, "hstu_bench.json"), "w") as f:
            json.dump(env, f, indent=1)
    print(json.dumps({k: v for k, v in env.items() if k != "rows"}))


if __name__ == "__main__":
    main()
