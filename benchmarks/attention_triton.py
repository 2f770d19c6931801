"""Same-run timing of jagattn's Triton attention against torch varlen_attn and FlexAttention.

The attention rows of BENCHMARKS.md (bf16, Hq=16, D=Dv=128, 32768 tokens per batch): causal
mean 512/2048/8192 x Hkv 16/4, skewed, non-causal mean 2048, sliding window (1024, causal)
mean 8192. Forward and forward+backward are timed with ``triton.testing.do_bench`` (median);
backward = (fwd+bwd) - fwd. TFLOP/s use the SPEC convention: fwd ``2 (D + Dv) Hq P`` with the
exact visible-pair count ``P``; bwd 2.5x that. Our backward is timed for both dQ paths
(``atomic``: fp32 atomics inside the dK/dV kernel; ``kernel``: separate deterministic dQ kernel).

Usage on the GPU machine: ``PYTHONPATH=src python3 benchmarks/attention_triton.py --out $OUT``.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import random
import sys
import time

import numpy as np
import torch
import triton

import jagattn
from jagattn.attention.triton import bwd as tbwd
from jagattn.attention.triton import common as tcommon
from jagattn.attention.triton import fwd as tfwd

TOTAL = 32768
HQ, D = 16, 128

# name, mean (None = skewed), hkv, causal, window
ROWS = [
    ("causal-m512-kv16", 512, 16, True, (-1, -1)),
    ("causal-m512-kv4", 512, 4, True, (-1, -1)),
    ("causal-m2048-kv16", 2048, 16, True, (-1, -1)),
    ("causal-m2048-kv4", 2048, 4, True, (-1, -1)),
    ("causal-m8192-kv16", 8192, 16, True, (-1, -1)),
    ("causal-m8192-kv4", 8192, 4, True, (-1, -1)),
    ("causal-skewed-kv16", None, 16, True, (-1, -1)),
    ("full-m2048-kv16", 2048, 16, False, (-1, -1)),
    ("window1024-m8192-kv16", 8192, 16, True, (1024, -1)),
]


def lengths_for(mean: int | None, seed: int) -> list[int]:
    rng = random.Random(seed)
    out: list[int] = []
    while sum(out) < TOTAL:
        if mean is None:
            out.append(rng.randint(64, 256) if rng.random() < 0.9 else rng.randint(4096, 8192))
        else:
            out.append(rng.randint(mean // 2, (3 * mean) // 2))
    out[-1] -= sum(out) - TOTAL
    return [n for n in out if n > 0]


def visible_pairs(lengths: list[int], causal: bool, window: tuple[int, int]) -> int:
    left, right = window
    if causal:
        right = 0
    total = 0
    for n in lengths:
        i = np.arange(n, dtype=np.int64)
        hi = np.minimum(n - 1, i + right) if right >= 0 else np.full(n, n - 1)
        lo = np.maximum(0, i - left) if left >= 0 else np.zeros(n, dtype=np.int64)
        total += int(np.maximum(hi - lo + 1, 0).sum())
    return total


def describe(lengths: list[int]) -> str:
    return f"{len(lengths)}seqs T={sum(lengths)} [{min(lengths)}..{max(lengths)}] avg={sum(lengths) // len(lengths)}"


def bench(fn, grad_to_none=None) -> float:
    return triton.testing.do_bench(fn, warmup=25, rep=100, grad_to_none=grad_to_none, return_mode="median")


def peak_extra_mb(fn) -> float:
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    fn()
    torch.cuda.synchronize()
    return (torch.cuda.max_memory_allocated() - base) / 2**20


# ---------------------------------------------------------------------------------------------
# implementations: each returns fwd(q, k, v) -> o


def ours(cu, mx, causal, window, deterministic=False):
    def fwd(q, k, v):
        return jagattn.attention(
            q,
            k,
            v,
            cu,
            cu,
            mx,
            mx,
            causal=causal,
            window=window,
            deterministic=deterministic,
            backend="triton",
        )

    return fwd


def torch_varlen(cu, mx, causal, window, hq, hkv):
    from torch.nn.attention.varlen import varlen_attn

    params = inspect.signature(varlen_attn).parameters
    left, right = window
    if causal:
        right = 0
    group = hq // hkv
    kwargs = {"window_size": (left, right)}
    native = "enable_gqa" in params
    if group > 1 and native:
        kwargs["enable_gqa"] = True
    note = "" if group == 1 or native else f"K/V expanded {group}x inside the timed call"

    def fwd(q, k, v):
        if group > 1 and not native:
            k = k.repeat_interleave(group, dim=1)
            v = v.repeat_interleave(group, dim=1)
        return varlen_attn(q, k, v, cu, cu, mx, mx, **kwargs)

    return fwd, note


_DOC = None
_FLEX = None


def _flex_compiled():
    global _FLEX
    if _FLEX is None:
        from torch.nn.attention.flex_attention import flex_attention

        cfg = torch._dynamo.config
        for knob in ("recompile_limit", "cache_size_limit"):
            if hasattr(cfg, knob):
                setattr(cfg, knob, max(getattr(cfg, knob), 64))
        _FLEX = torch.compile(flex_attention, dynamic=False)
    return _FLEX


def _mask_causal(b, h, q_idx, kv_idx):
    return (_DOC[q_idx] == _DOC[kv_idx]) & (kv_idx <= q_idx)


def _mask_full(b, h, q_idx, kv_idx):
    return _DOC[q_idx] == _DOC[kv_idx]


def _mask_window1024(b, h, q_idx, kv_idx):
    return (_DOC[q_idx] == _DOC[kv_idx]) & (kv_idx <= q_idx) & (q_idx - kv_idx <= 1024)


def flex(lengths, causal, window, hq, hkv, device):
    global _DOC
    from torch.nn.attention.flex_attention import create_block_mask

    doc = torch.repeat_interleave(
        torch.arange(len(lengths), device=device), torch.tensor(lengths, device=device)
    ).to(torch.int32)
    if _DOC is None:
        _DOC = doc
    else:
        _DOC.copy_(doc)  # same tensor object for every row: no recompiles of the mask
    if not causal:
        mask = _mask_full
    elif window[0] < 0:
        mask = _mask_causal
    elif window[0] == 1024:
        mask = _mask_window1024
    else:
        raise ValueError(window)
    block_mask = create_block_mask(mask, None, None, TOTAL, TOTAL, device=device)
    f = _flex_compiled()
    gqa = hq != hkv

    def fwd(q, k, v):
        q4, k4, v4 = (x.transpose(0, 1).unsqueeze(0) for x in (q, k, v))
        return f(q4, k4, v4, block_mask=block_mask, enable_gqa=gqa)[0].transpose(0, 1)

    return fwd


# ---------------------------------------------------------------------------------------------


def run_row(row, args, log):
    name, mean, hkv, causal, window = row
    dev = "cuda"
    lengths = lengths_for(mean, seed=1234)
    cu = torch.tensor([0] + list(np.cumsum(lengths)), dtype=torch.int32, device=dev)
    mx = max(lengths)
    pairs = visible_pairs(lengths, causal, window)
    fl_f = 2 * (D + D) * HQ * pairs
    fl_b = 2.5 * fl_f
    g = torch.Generator(device="cpu").manual_seed(7)
    q = (torch.randn(TOTAL, HQ, D, generator=g) * 0.5).to(dev, torch.bfloat16)
    k = (torch.randn(TOTAL, hkv, D, generator=g) * 0.5).to(dev, torch.bfloat16)
    v = torch.randn(TOTAL, hkv, D, generator=g).to(dev, torch.bfloat16)
    do = torch.randn(TOTAL, HQ, D, generator=g).to(dev, torch.bfloat16)
    res = {
        "row": name,
        "config": describe(lengths),
        "pairs": pairs,
        "hkv": hkv,
        "causal": causal,
        "window": window,
    }

    impls = {}
    impls["ours"] = (ours(cu, mx, causal, window), "")
    if "varlen" in args.peers:
        try:
            impls["varlen"] = torch_varlen(cu, mx, causal, window, HQ, hkv)
        except Exception as exc:
            res["varlen_error"] = f"{type(exc).__name__}: {exc}"
    if "flex" in args.peers and (not args.flex_rows or name in args.flex_rows):
        try:
            impls["flex"] = (flex(lengths, causal, window, HQ, hkv, dev), "")
        except Exception as exc:
            res["flex_error"] = f"{type(exc).__name__}: {exc}"[:300]

    o_ours = None
    for iname, (fn, note) in impls.items():
        try:
            t0 = time.time()
            with torch.no_grad():
                o = fn(q, k, v)
            if iname == "ours":
                o_ours = o.float()
            elif o_ours is not None:
                res[f"{iname}_maxdiff_vs_ours"] = float((o.float() - o_ours).abs().max())
            with torch.no_grad():
                ms_f = bench(lambda fn=fn: fn(q, k, v))
            qg, kg, vg = (x.detach().clone().requires_grad_(True) for x in (q, k, v))
            modes = args.modes if iname == "ours" else [""]
            for mode in modes:
                if mode:
                    os.environ["JAGATTN_ATTN_DQ"] = mode

                def step(fn=fn, qg=qg, kg=kg, vg=vg):
                    fn(qg, kg, vg).backward(do)

                step()
                ms_fb = bench(step, grad_to_none=[qg, kg, vg])
                mem = peak_extra_mb(step)
                key = iname + (f"_{mode}" if mode else "")
                res[key] = {
                    "fwd_ms": ms_f,
                    "fwdbwd_ms": ms_fb,
                    "bwd_ms": ms_fb - ms_f,
                    "fwd_tflops": fl_f / ms_f * 1e-9,
                    "bwd_tflops": fl_b / (ms_fb - ms_f) * 1e-9,
                    "peak_extra_mb": mem,
                    "note": note,
                    "wall_s": time.time() - t0,
                }
            os.environ.pop("JAGATTN_ATTN_DQ", None)
        except Exception as exc:
            res[f"{iname}_error"] = f"{type(exc).__name__}: {exc}"[:400]
            os.environ.pop("JAGATTN_ATTN_DQ", None)
    if "ours_kernel" in res or "ours_atomic" in res:
        for mode in args.modes:
            os.environ["JAGATTN_ATTN_DQ"] = mode
            res[f"ours_{mode}_us"] = kernel_breakdown(impls["ours"][0], q, k, v, do)
        os.environ.pop("JAGATTN_ATTN_DQ", None)
        peer = next((p for p in ("varlen", "flex") if p in res), None)
        if peer is not None:
            res[f"grad_vs_{peer}"] = grad_diffs(impls["ours"][0], impls[peer][0], q, k, v, do)
    log(json.dumps(res))
    log_autotune(name, log)
    return res


def grad_diffs(fn_a, fn_b, q, k, v, do) -> dict:
    """Max-abs difference of dq/dk/dv between two implementations (autotuned configs, as timed),
    next to the RMS of the peer's gradient: a sanity check, the tests hold the real tolerance."""
    out = {}
    grads = []
    for fn in (fn_a, fn_b):
        qg, kg, vg = (x.detach().clone().requires_grad_(True) for x in (q, k, v))
        fn(qg, kg, vg).backward(do)
        grads.append((qg.grad.float(), kg.grad.float(), vg.grad.float()))
    for name, a, b in zip(("dq", "dk", "dv"), grads[0], grads[1], strict=True):
        out[name] = {"maxdiff": float((a - b).abs().max()), "peer_rms": float(b.pow(2).mean().sqrt())}
    return out


def kernel_breakdown(fn, q, k, v, do) -> dict:
    """Device time per kernel (microseconds, mean of 5 fwd+bwd steps) from the torch profiler."""
    qg, kg, vg = (x.detach().clone().requires_grad_(True) for x in (q, k, v))
    fn(qg, kg, vg).backward(do)
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(5):
            qg.grad = kg.grad = vg.grad = None
            fn(qg, kg, vg).backward(do)
        torch.cuda.synchronize()
    out: dict = {}
    for ev in prof.key_averages():
        t = getattr(ev, "device_time_total", None) or getattr(ev, "cuda_time_total", 0)
        if t:
            out[ev.key[:60]] = round(t / 5, 1)
    return dict(sorted(out.items(), key=lambda kv: -kv[1])[:8])


_SEEN_TIMINGS: dict = {}


def tuned_kernels() -> list[tuple[str, object]]:
    """(name, autotuner) of every tuned launcher; the two dK/dV launchers share one kernel."""
    return [
        ("_attention_fwd_kernel", tfwd._attention_fwd_kernel),
        ("_attention_bwd_dkdv_kernel", tbwd._attention_bwd_dkdv_kernel),
        ("_attention_bwd_dkdv_kernel(atomic dQ)", tbwd._attention_bwd_dkdv_dq_kernel),
        ("_attention_bwd_dq_kernel", tbwd._attention_bwd_dq_kernel),
    ]


def log_autotune(row: str, log) -> None:
    """Every config's time (ms) from the last autotune of each kernel, when it changed."""
    for name, kern in tuned_kernels():
        timings = getattr(kern, "configs_timings", None)
        if not timings:
            continue
        flat = {str(c): [round(float(x), 4) for x in (t if isinstance(t, (list, tuple)) else [t])]
                for c, t in timings.items()}  # fmt: skip
        if _SEEN_TIMINGS.get(name) != flat:
            _SEEN_TIMINGS[name] = flat
            log(json.dumps({"autotune_after_row": row, "kernel": name, "timings_ms": flat}))


def summarize(results, log):
    log("")
    log(
        f"{'row':24s} {'config':40s} | fwd TFLOP/s ours/varlen/flex (x best) | bwd TFLOP/s atomic/kernel/varlen/flex (x best)"
    )
    for r in results:

        def tf(key, what, r=r):
            v = r.get(key)
            return v[what] if isinstance(v, dict) else float("nan")

        f_o = np.nanmax([tf("ours_kernel", "fwd_tflops"), tf("ours_atomic", "fwd_tflops")])
        f_v, f_f = tf("varlen", "fwd_tflops"), tf("flex", "fwd_tflops")
        b_a, b_k = tf("ours_atomic", "bwd_tflops"), tf("ours_kernel", "bwd_tflops")
        b_v, b_f = tf("varlen", "bwd_tflops"), tf("flex", "bwd_tflops")
        best_f = np.nanmax([f_v, f_f]) if not (np.isnan(f_v) and np.isnan(f_f)) else float("nan")
        best_b = np.nanmax([b_v, b_f]) if not (np.isnan(b_v) and np.isnan(b_f)) else float("nan")
        log(
            f"{r['row']:24s} {r['config'][:40]:40s} | {f_o:6.1f} / {f_v:6.1f} / {f_f:6.1f} (x{f_o / best_f:4.2f}) | "
            f"{b_a:6.1f} / {b_k:6.1f} / {b_v:6.1f} / {b_f:6.1f} (x{np.nanmax([b_a, b_k]) / best_b:4.2f})"
        )


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    ap.add_argument("--rows", nargs="*", default=[])
    ap.add_argument("--peers", nargs="*", default=["varlen", "flex"])
    ap.add_argument("--flex-rows", nargs="*", default=[])
    ap.add_argument("--modes", nargs="*", default=["kernel"], help="our dQ paths to time: kernel, atomic")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    logf = open(os.path.join(args.out, "attention_bench.jsonl"), "a")  # noqa: SIM115  (lives as long as main)

    def log(line):
        print(line, flush=True)
        logf.write(line + "\n")
        logf.flush()

    props = torch.cuda.get_device_properties(0)
    log(json.dumps({
        "device": props.name, "sms": props.multi_processor_count, "torch": torch.__version__,
        "triton": triton.__version__, "autotune": tcommon.AUTOTUNE,
    }))  # fmt: skip
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    ms = bench(lambda m=a: m @ m)
    log(json.dumps({"ceiling_bf16_matmul_tflops": 2 * 8192**3 / ms * 1e-9}))
    del a
    results = []
    for row in ROWS:
        if args.rows and row[0] not in args.rows:
            continue
        t0 = time.time()
        try:
            results.append(run_row(row, args, log))
        except Exception as exc:
            log(json.dumps({"row": row[0], "error": f"{type(exc).__name__}: {exc}"[:400]}))
        log(f"# {row[0]} took {time.time() - t0:.1f}s")
    for name, kern in tuned_kernels():
        cache = {str(k): str(v) for k, v in getattr(kern, "cache", {}).items()}
        log(json.dumps({"kernel": name, "best_configs": cache}))
    dump_compiled(log)
    summarize(results, log)
    return 0


def dump_compiled(log) -> None:
    """Registers and spills of every compiled variant (best effort; Triton internals move)."""
    for kern in (tfwd._attention_fwd_kernel, tbwd._attention_bwd_dkdv_kernel, tbwd._attention_bwd_dq_kernel):
        try:  # the dK/dV entry lists the variants of both of its launchers (one JIT function)
            for caches in kern.fn.device_caches.values():
                for ck in caches[0].values():
                    md = ck.metadata
                    log(json.dumps({
                        "kernel": kern.base_fn.__name__, "n_regs": getattr(ck, "n_regs", None),
                        "n_spills": getattr(ck, "n_spills", None), "num_warps": md.num_warps,
                        "num_stages": md.num_stages, "shared": md.shared,
                    }))  # fmt: skip
        except Exception as exc:
            log(f"# dump_compiled {kern.base_fn.__name__}: {type(exc).__name__}: {exc}")


if __name__ == "__main__":
    sys.exit(main())
