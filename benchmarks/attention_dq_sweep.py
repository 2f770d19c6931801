"""Device sweep of the attention backward's two dQ paths: separate dQ kernel vs fp32 atomics.

For every config of the atomic dK/dV+dQ kernel (``bwd._dkdv_dq_configs``), forced one at a time:
the SPEC section 5 check of forward, lse and every gradient on a 16k-token GQA batch (the gpu
test's case, bf16, fp32 gold on the GPU), then the backward time on the causal attention rows of
BENCHMARKS.md; the kernel path (first-listed configs, as ``JAGATTN_AUTOTUNE=0`` runs it) is timed
on the same rows in the same process. The best atomic config is then timed with other head-chunk
widths (``JAGATTN_ATTN_DQ_HEADS``) and on the non-causal and window rows. Writes one JSON line per
measurement to ``$OUT/attention_dq_sweep.jsonl``.

Usage on the GPU machine: ``JAGATTN_AUTOTUNE=0 PYTHONPATH=src:tests python3 benchmarks/attention_dq_sweep.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np
import torch
import triton

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))

import attention_triton as bench  # noqa: E402

from jagattn.attention.triton import bwd as tbwd  # noqa: E402

CAUSAL_ROWS = [r for r in bench.ROWS if r[3] and r[4] == (-1, -1)]
OTHER_ROWS = [r for r in bench.ROWS if r not in CAUSAL_ROWS]


def force_config(cfg, kern=None) -> None:
    kern = kern or tbwd._attention_bwd_dkdv_dq_kernel
    kern.configs = [cfg]
    kern.cache.clear()


def row_inputs(row):
    name, mean, hkv, causal, window = row
    lengths = bench.lengths_for(mean, seed=1234)
    cu = torch.tensor([0] + list(np.cumsum(lengths)), dtype=torch.int32, device="cuda")
    g = torch.Generator(device="cpu").manual_seed(7)
    q = (torch.randn(bench.TOTAL, bench.HQ, bench.D, generator=g) * 0.5).to("cuda", torch.bfloat16)
    k = (torch.randn(bench.TOTAL, hkv, bench.D, generator=g) * 0.5).to("cuda", torch.bfloat16)
    v = torch.randn(bench.TOTAL, hkv, bench.D, generator=g).to("cuda", torch.bfloat16)
    do = torch.randn(bench.TOTAL, bench.HQ, bench.D, generator=g).to("cuda", torch.bfloat16)
    fl_b = 2.5 * 2 * (2 * bench.D) * bench.HQ * bench.visible_pairs(lengths, causal, window)
    return dict(lengths=lengths, cu=cu, mx=max(lengths), q=q, k=k, v=v, do=do, fl_b=fl_b)


_FWD_MS: dict = {}


def time_bwd(row, inp, mode: str, heads: str = "") -> dict:
    name, mean, hkv, causal, window = row
    os.environ["JAGATTN_ATTN_DQ"] = mode
    if heads:
        os.environ["JAGATTN_ATTN_DQ_HEADS"] = heads
    else:
        os.environ.pop("JAGATTN_ATTN_DQ_HEADS", None)
    fn = bench.ours(inp["cu"], inp["mx"], causal, window)
    q, k, v, do = inp["q"], inp["k"], inp["v"], inp["do"]
    if name not in _FWD_MS:
        with torch.no_grad():
            fn(q, k, v)
            _FWD_MS[name] = bench.bench(lambda: fn(q, k, v))
    qg, kg, vg = (x.detach().clone().requires_grad_(True) for x in (q, k, v))

    def step():
        fn(qg, kg, vg).backward(do)

    step()
    ms_fb = bench.bench(step, grad_to_none=[qg, kg, vg])
    mem = bench.peak_extra_mb(step)
    bwd_ms = ms_fb - _FWD_MS[name]
    return {
        "bwd_ms": round(bwd_ms, 4),
        "bwd_tflops": round(inp["fl_b"] / bwd_ms * 1e-9, 1),
        "peak_extra_mb": round(mem),
    }


def dkdv_sweep(args, log) -> int:
    """``--dkdv``: the separate-dQ path with each extra dK/dV tile forced (spec check + causal rows)."""
    inputs = {r[0]: row_inputs(r) for r in CAUSAL_ROWS}
    extra = [triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "DQ_T": True}, num_warps=w, num_stages=st)
             for bm, bn, w, st in args.dkdv]  # fmt: skip
    first = tbwd._attention_bwd_dkdv_kernel.configs[0]
    # each extra tile, then the first-listed tile again with the (heads, slots) grid
    for cfg, head_major in [(first, False), *((c, False) for c in extra), (first, True)]:
        force_config(cfg, tbwd._attention_bwd_dkdv_kernel)
        os.environ["JAGATTN_ATTN_HEAD_MAJOR"] = "1" if head_major else "0"
        try:
            check = spec_check("kernel")
        except Exception as exc:  # a config that does not compile
            check = f"ERROR {type(exc).__name__}: {str(exc)[:200]}"
        log({"dkdv_config": str(cfg), "head_major": head_major, "spec_check": check})
        if check != "ok":
            continue
        for r in CAUSAL_ROWS:
            res = time_bwd(r, inputs[r[0]], "kernel")
            log({"row": r[0], "mode": "kernel", "dkdv_config": str(cfg), "head_major": head_major, **res})
    os.environ.pop("JAGATTN_ATTN_HEAD_MAJOR", None)
    return 0


def spec_check(mode: str = "atomic") -> str:
    """The gpu test's atomic-mode case (SPEC section 5 rule); 'ok' or the failure."""
    import test_attention_triton as tat

    lens = tat._lengths_total(16384, 1024, seed=5) + [0, 1, 63, 65]
    os.environ["JAGATTN_ATTN_DQ"] = mode
    try:
        tat._compare(
            lens, lens, 16, 4, 128, 128, dtype=torch.bfloat16, seed=22, gold_device="cuda", causal=True
        )
        return "ok"
    except AssertionError as exc:
        return "FAIL " + str(exc)[:300]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    ap.add_argument("--budget-s", type=float, default=120.0)
    ap.add_argument("--dkdv", type=lambda t: tuple(int(x) for x in t.split(",")), nargs="*", default=None,
                    help="instead of the atomic sweep: extra dK/dV tiles BM,BN,warps,stages of the kernel path")  # fmt: skip
    args = ap.parse_args()
    t_start = time.time()
    logf = open(os.path.join(args.out, "attention_dq_sweep.jsonl"), "a")  # noqa: SIM115

    def log(obj):
        line = json.dumps(obj)
        print(line, flush=True)
        logf.write(line + "\n")
        logf.flush()

    props = torch.cuda.get_device_properties(0)
    log({"device": props.name, "torch": torch.__version__, "triton": triton.__version__,
         "git": os.environ.get("JAGATTN_GIT_SHA", "?"), "command": " ".join(sys.argv)})  # fmt: skip
    if args.dkdv is not None:
        return dkdv_sweep(args, log)
    inputs = {r[0]: row_inputs(r) for r in CAUSAL_ROWS}
    for r in CAUSAL_ROWS:
        log({"row": r[0], "mode": "kernel", **time_bwd(r, inputs[r[0]], "kernel")})
    results = {}
    for cfg in tbwd._dkdv_dq_configs()[:-1]:  # the last one is the fallback for head dims > 128
        if time.time() - t_start > args.budget_s * 0.6:
            log({"skipped_config": str(cfg), "why": "time budget"})
            continue
        force_config(cfg)
        os.environ["JAGATTN_ATTN_DQ"] = "atomic"
        os.environ.pop("JAGATTN_ATTN_DQ_HEADS", None)
        t0 = time.time()
        check = spec_check()
        log({"config": str(cfg), "spec_check": check, "s": round(time.time() - t0, 1)})
        if check != "ok":
            continue
        tot = 0.0
        for r in CAUSAL_ROWS:
            res = time_bwd(r, inputs[r[0]], "atomic")
            log({"row": r[0], "mode": "atomic", "config": str(cfg), **res})
            if "m8192" in r[0] or "skewed" in r[0]:
                tot += res["bwd_ms"]
        results[str(cfg)] = (tot, cfg)
    if not results:
        return 1
    best = min(results.values(), key=lambda t: t[0])[1]
    log({"best_atomic_config": str(best)})
    force_config(best)
    for heads in ("16", "8", "2"):
        if time.time() - t_start > args.budget_s * 0.8:
            break
        for r in CAUSAL_ROWS:
            if "m8192" in r[0] or "m512" in r[0]:
                log(
                    {
                        "row": r[0],
                        "mode": "atomic",
                        "heads": heads,
                        **time_bwd(r, inputs[r[0]], "atomic", heads),
                    }
                )
    del inputs
    for r in OTHER_ROWS:
        if time.time() - t_start > args.budget_s * 0.9:
            break
        inp = row_inputs(r)
        log({"row": r[0], "mode": "kernel", **time_bwd(r, inp, "kernel")})
        log({"row": r[0], "mode": "atomic", "config": str(best), **time_bwd(r, inp, "atomic")})
    bench.dump_compiled(lambda line: (print(line), logf.write(line + "\n")))  # every dK/dV variant too
    log({"total_s": round(time.time() - t_start, 1)})
    return 0


if __name__ == "__main__":
    sys.exit(main())
