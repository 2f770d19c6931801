"""Run every autotune config of every gated delta kernel alone, each in its own process.

Triton 3.6 on Hopper miscompiles some configs of some kernels (illegal memory accesses, wrong
values: flash-linear-attention issues 640 and 984). An illegal access kills the CUDA context, so
each (kernel, config) runs in a fresh process: every other autotuned kernel is pinned to its first
config and the target kernel to the config under test; forward + backward outputs are compared
with the all-first-configs run. Prints one line per config: ok / MISMATCH / CRASH.

Usage on the GPU machine (the candidate lists are opt-in, see ``triton/common.py``):
``JAGATTN_GATED_DELTA_AUTOTUNE=1 PYTHONPATH=src python3 benchmarks/gated_delta_config_sweep.py --out $OUT``.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import json
import os
import subprocess
import sys

KERNELS = {
    "fwd_h": ("jagattn.gated_delta.triton.chunk_fwd", "_gated_delta_fwd_h_kernel"),
    "fwd_o": ("jagattn.gated_delta.triton.chunk_fwd", "_gated_delta_fwd_o_kernel"),
    "bwd_dv_local": ("jagattn.gated_delta.triton.chunk_bwd", "_gated_delta_bwd_dv_local_kernel"),
    "bwd_dhu": ("jagattn.gated_delta.triton.chunk_bwd", "_gated_delta_bwd_dhu_kernel"),
    "fwd_recurrent": ("jagattn.gated_delta.triton.recurrent", "_gated_delta_fwd_recurrent_kernel"),
}
CASES = {
    "H16-8seqs": (16, 16, [4096] * 8),
    "odd": (4, 8, [0, 1, 63, 64, 65, 130, 4000, 0, 2049]),
}


def _kernel(name):
    import importlib

    mod, attr = KERNELS[name]
    return getattr(importlib.import_module(mod), attr)


def one(target: str | None, idx: int, base_path: str, write_base: bool) -> dict:
    import torch
    import torch.nn.functional as F

    from jagattn.gated_delta import ops

    for name in KERNELS:
        k = _kernel(name)
        k.configs = [k.configs[idx]] if name == target else [k.configs[0]]
    outs = {}
    for case, (h, hv, lengths) in CASES.items():
        gen = torch.Generator(device="cuda").manual_seed(0)
        t = sum(lengths)
        q, k = (torch.randn(t, h, 128, device="cuda", generator=gen).bfloat16() for _ in range(2))
        v = torch.randn(t, hv, 128, device="cuda", generator=gen).bfloat16()
        g = F.logsigmoid(torch.randn(t, hv, device="cuda", generator=gen))
        beta = torch.sigmoid(torch.randn(t, hv, device="cuda", generator=gen))
        h0 = torch.randn(len(lengths), hv, 128, 128, device="cuda", generator=gen)
        cu = torch.tensor([0] + list(torch.tensor(lengths).cumsum(0)), dtype=torch.int32, device="cuda")
        do = torch.randn(t, hv, 128, device="cuda", generator=gen).bfloat16()
        dht = torch.randn_like(h0)
        res = list(ops.gated_delta_fwd(q, k, v, g, beta, h0, cu, 128**-0.5, True))
        res += list(ops.gated_delta_bwd(q, k, v, g, beta, h0, cu, do, dht, 128**-0.5, True))
        res += list(ops.gated_delta_fwd_recurrent(q, k, v, g, beta, None, h0, cu, 128**-0.5, True))
        torch.cuda.synchronize()
        outs[case] = [r.float().cpu() for r in res]
    if write_base:
        torch.save(outs, base_path)
        return {"ok": True}
    base = torch.load(base_path)
    worst = 0.0
    finite = True
    for case in outs:
        for a, b in zip(outs[case], base[case], strict=True):
            finite &= bool(torch.isfinite(a).all())
            scale = b.abs().max().clamp_min(1e-6)
            worst = max(worst, float((a - b).abs().max() / scale))
    return {"ok": finite and worst < 2e-2, "max_rel_diff": worst, "finite": finite}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=".")
    ap.add_argument("--one", nargs=2)
    ap.add_argument("--base", default="/tmp/gd_sweep_base.pt")
    ap.add_argument("--write-base", action="store_true")
    args = ap.parse_args()
    if args.one or args.write_base:
        target, idx = (args.one[0], int(args.one[1])) if args.one else (None, 0)
        print("RESULT " + json.dumps(one(target, idx, args.base, args.write_base)), flush=True)
        return
    env = dict(os.environ, JAGATTN_GATED_DELTA_AUTOTUNE="1")
    cmd = [sys.executable, __file__, "--base", args.base]
    r = subprocess.run(cmd + ["--write-base"], env=env, capture_output=True, text=True, timeout=300)
    print("baseline:", r.stdout.strip().splitlines()[-1:] or r.stderr[-2000:], flush=True)
    jobs = []
    for name in KERNELS:
        sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))
        n_cfg = len(_kernel(name).configs)
        jobs += [(name, i) for i in range(1, n_cfg)]

    def run(job):
        name, i = job
        try:
            p = subprocess.run(
                cmd + ["--one", name, str(i)], env=env, capture_output=True, text=True, timeout=240
            )
        except subprocess.TimeoutExpired:
            return job, {"ok": False, "error": "timeout"}
        lines = [ln for ln in p.stdout.splitlines() if ln.startswith("RESULT ")]
        if p.returncode != 0 or not lines:
            return job, {"ok": False, "error": f"CRASH rc={p.returncode}: {p.stderr.strip()[-300:]}"}
        return job, json.loads(lines[-1][7:])

    results = {}
    with cf.ThreadPoolExecutor(4) as ex:
        for (name, i), res in ex.map(run, jobs):
            cfg = _kernel(name).configs[i]
            tag = "ok" if res.get("ok") else ("CRASH" if "error" in res else "MISMATCH")
            print(f"{name:14s} cfg{i} {cfg}: {tag} {res}", flush=True)
            results[f"{name}:{i}"] = {"config": str(cfg), **res}
    with open(os.path.join(args.out, "gated_delta_config_sweep.json"), "w") as f:
        json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
