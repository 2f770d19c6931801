"""Check that every launch config of every gated delta kernel gives the same result to rounding.

For each kernel (``common.CANDIDATES``) and each of its candidate configs, in one process per
kernel (an illegal memory access kills the CUDA context; the last ``RUN`` line printed names the
config that was running), every other kernel keeps its default config and the target kernel is
forced to the candidate (``common.CONFIG_OVERRIDE``). Forward + backward (+ the recurrent forward)
outputs are compared, per output:

- ``err``: max-abs error against an fp32 reference (token loop, ``reference.py``) on a small odd
  case, divided by the default config's own error. A config that differs only in rounding has a
  ratio near 1; a race or a wrong mask gives a large one. Pass: ratio <= 1.5 (plus a 1e-5 rms floor).
- ``rep``: the candidate run twice gives bit-identical outputs (a race usually shows up here).
- ``big``: on a 16-head 8 x 4096 batch, max-abs difference to the default config divided by the
  output's rms (informational: rounding-order changes show as ~1e-3 in bf16).

Also ``--checks``: allocation-independence (bitwise), w/u loop == per-tile kernel (bitwise), and the
opt-in 64x64-dot A build against the default, in one process.

Usage on the GPU machine: ``PYTHONPATH=src python3 benchmarks/gated_delta_config_sweep.py --out $OUT``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

NAMES = ["o", "ht", "dq", "dk", "dv", "dg", "db", "dh0", "o_rec", "ht_rec"]


def make(h, hv, lengths, seed=0):
    import torch
    import torch.nn.functional as F

    gen = torch.Generator(device="cuda").manual_seed(seed)
    t = sum(lengths)
    q = torch.randn(t, h, 128, device="cuda", generator=gen).bfloat16()
    k = torch.randn(t, h, 128, device="cuda", generator=gen).bfloat16()
    v = torch.randn(t, hv, 128, device="cuda", generator=gen).bfloat16()
    g = F.logsigmoid(torch.randn(t, hv, device="cuda", generator=gen))
    beta = torch.sigmoid(torch.randn(t, hv, device="cuda", generator=gen))
    h0 = torch.randn(len(lengths), hv, 128, 128, device="cuda", generator=gen)
    cu = torch.tensor(
        [0] + [int(x) for x in torch.tensor(lengths).cumsum(0)], dtype=torch.int32, device="cuda"
    )
    do = torch.randn(t, hv, 128, device="cuda", generator=gen).bfloat16()
    dht = torch.randn_like(h0)
    return q, k, v, g, beta, h0, cu, do, dht


def run_ops(x):
    import torch

    from jagattn.gated_delta import ops

    q, k, v, g, beta, h0, cu, do, dht = x
    out = list(ops.gated_delta_fwd(q, k, v, g, beta, h0, cu, 128**-0.5, True))
    out += list(ops.gated_delta_bwd(q, k, v, g, beta, h0, cu, do, dht, 128**-0.5, True))
    out += list(ops.gated_delta_fwd_recurrent(q, k, v, g, beta, None, h0, cu, 128**-0.5, True))
    torch.cuda.synchronize()
    return [o.float().clone() for o in out]


def reference(x):
    import torch

    from jagattn.gated_delta.reference import gated_delta_reference

    q, k, v, g, beta, h0, cu, do, dht = x
    leaves = [t.detach().float().requires_grad_() for t in (q, k, v, g, beta, h0)]
    o, ht = gated_delta_reference(
        *leaves[:5], cu, scale=128**-0.5, initial_state=leaves[5], use_qk_l2norm=True
    )
    loss = (o * do.float()).sum() + (ht * dht).sum()
    grads = torch.autograd.grad(loss, leaves)
    return [o.detach(), ht.detach(), *grads, o.detach(), ht.detach()]


def sweep_kernel(kernel: str) -> dict:
    from jagattn.gated_delta.triton import common

    small = make(2, 4, [0, 1, 63, 64, 65, 130, 700, 0, 300])
    big = make(16, 16, [4096] * 8, seed=1)
    gold = reference(small)
    common.CONFIG_OVERRIDE.clear()
    base_small = run_ops(small)
    base_big = run_ops(big)
    base_err = [float((a - b).abs().max()) for a, b in zip(base_small, gold, strict=True)]
    base_rms = [float((a - b).pow(2).mean().sqrt()) for a, b in zip(base_small, gold, strict=True)]
    floor = [1e-5 * float(b.pow(2).mean().sqrt()) for b in gold]
    results = {}
    for cfg in common.CANDIDATES[kernel]:
        print(f"RUN {kernel} {cfg}", flush=True)
        common.CONFIG_OVERRIDE[kernel] = cfg
        a1 = run_ops(small)
        a2 = run_ops(small)
        b1 = run_ops(big)
        common.CONFIG_OVERRIDE.clear()
        row = {}
        ok = True
        for i, name in enumerate(NAMES):
            err = float((a1[i] - gold[i]).abs().max())
            ratio = err / max(base_err[i], floor[i])
            # the max error of a bf16 output is its own rounding at the largest element, the same for
            # every config; the rms error moves with the kernel's arithmetic
            rms_err = float((a1[i] - gold[i]).pow(2).mean().sqrt())
            rms_ratio = rms_err / max(base_rms[i], floor[i])
            rep = bool(torch_equal(a1[i], a2[i]))
            rms = float(base_big[i].pow(2).mean().sqrt()) or 1.0
            big_diff = float((b1[i] - base_big[i]).abs().max()) / rms
            finite = bool(a1[i].isfinite().all() and b1[i].isfinite().all())
            good = finite and rep and ratio <= 1.5 and rms_ratio <= 1.5
            ok &= good
            row[name] = {
                "err_ratio": round(ratio, 3),
                "rms_err_ratio": round(rms_ratio, 3),
                "repeat_equal": rep,
                "big_bitwise_equal_default": big_diff == 0.0,
                "big_diff_rel_rms": big_diff,
                "ok": good,
            }
        results[str(cfg)] = {"ok": ok, "outputs": row}
        bad = {n: r for n, r in row.items() if not r["ok"]}
        worst = max(r["err_ratio"] for r in row.values())
        worst_rms = max(r["rms_err_ratio"] for r in row.values())
        same = all(r["big_bitwise_equal_default"] for r in row.values())
        print(
            f"{kernel:14s} {cfg}: {'ok' if ok else 'FAIL'} worst max/rms err ratio {worst:.3f}/{worst_rms:.3f}"
            f" bitwise-equal-default(big)={same} bad={bad}",
            flush=True,
        )
    return results


# configs kept out of CANDIDATES because they crashed: re-run alone (one process each) to map the failure
PROBES = [
    ("fwd_o", (32, 4, 1), 128),
    ("fwd_o", (32, 8, 1), 128),
    ("fwd_o", (16, 4, 1), 128),
    ("fwd_o", (32, 4, 1), 64),
    ("bwd_dv_local", (32, 4, 1), 128),
    ("bwd_dv_local", (32, 8, 1), 128),
    ("bwd_dv_local", (16, 4, 1), 128),
    ("bwd_dv_local", (32, 4, 1), 64),
]


def probe(kernel: str, cfg: tuple, dk: int) -> dict:
    import torch

    from jagattn.gated_delta import ops
    from jagattn.gated_delta.triton import common

    q, k, v, g, beta, h0, cu, do, dht = make(4, 4, [0, 1, 63, 64, 65, 130, 700, 0, 300])
    q, k = q[..., :dk].contiguous(), k[..., :dk].contiguous()
    h0, dht = h0[:, :, :dk].contiguous(), dht[:, :, :dk].contiguous()
    args = (q, k, v, g, beta, h0, cu)
    base = list(ops.gated_delta_fwd(*args, dk**-0.5, True)) + list(
        ops.gated_delta_bwd(*args, do, dht, dk**-0.5, True)
    )
    torch.cuda.synchronize()
    common.CONFIG_OVERRIDE[kernel] = cfg
    got = list(ops.gated_delta_fwd(*args, dk**-0.5, True)) + list(
        ops.gated_delta_bwd(*args, do, dht, dk**-0.5, True)
    )
    torch.cuda.synchronize()
    diff = max(
        float((a.float() - b.float()).abs().max() / b.float().abs().max().clamp_min(1e-30))
        for a, b in zip(got, base, strict=True)
    )
    return {"max_rel_diff_to_default": diff}


# cases of the in-process checks (--checks)
CHECK_CASES = {
    "H1-32k-single": (1, 1, [32768]),
    "H16-32k-single": (16, 16, [32768]),
    "H16-8x4096": (16, 16, [4096] * 8),
    "H2-HV4-odd": (2, 4, [0, 1, 63, 64, 65, 130, 700, 0, 300]),
}


def checks() -> None:
    """In one process: (1) results do not depend on allocation (run, allocate and free 1 GiB of
    NaN, run again: bitwise equal); (2) the w/u "loop" kernel equals the per-tile one bitwise;
    (3) the opt-in 64x64-dot A build against the default (rounding-level, informational)."""
    import torch

    from jagattn.gated_delta.triton import chunk_fwd, common

    for case, (h, hv, lengths) in CHECK_CASES.items():
        x = make(h, hv, lengths, seed=3)
        a = run_ops(x)
        junk = torch.full((1 << 28,), float("nan"), device="cuda")
        del junk
        b = run_ops(x)
        det = all(torch_equal(p, q) for p, q in zip(a, b, strict=True))
        chunk_fwd.WU_VARIANT = "tiles"
        c = run_ops(x)
        chunk_fwd.WU_VARIANT = "loop"
        wu_same = all(torch_equal(p, q) for p, q in zip(a, c, strict=True))
        chunk_fwd.KKT_VARIANT = "dot64"
        common.CONFIG_OVERRIDE["fwd_kkt_solve"] = (0, 4, 1)
        d = run_ops(x)
        chunk_fwd.KKT_VARIANT = "blocks16"
        common.CONFIG_OVERRIDE.clear()
        dot64 = {
            n: float((p - q).abs().max() / q.abs().max().clamp_min(1e-30))
            for n, p, q in zip(NAMES, d, a, strict=True)
        }
        fin = all(bool(o.isfinite().all()) for o in a + d)
        print(
            f"check {case}: deterministic={det} wu_loop==tiles={wu_same} finite={fin} "
            f"dot64 max rel diff {max(dot64.values()):.3e}",
            flush=True,
        )


def torch_equal(a, b):
    import torch

    return torch.equal(torch.nan_to_num(a, nan=1e30), torch.nan_to_num(b, nan=1e30))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=".")
    ap.add_argument("--kernel")
    ap.add_argument("--probe", type=int)
    ap.add_argument("--checks", action="store_true")
    ap.add_argument("--kernels", help="comma-separated subset of common.CANDIDATES (default: all)")
    ap.add_argument("--no-probes", action="store_true", help="skip the re-runs of the excluded configs")
    args = ap.parse_args()
    if args.checks:
        checks()
        return
    if args.kernel:
        print("RESULT " + json.dumps(sweep_kernel(args.kernel)), flush=True)
        return
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))
    from jagattn.gated_delta.triton import common

    kernels = args.kernels.split(",") if args.kernels else list(common.CANDIDATES)
    procs = {
        name: subprocess.Popen(
            [sys.executable, __file__, "--kernel", name],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in kernels
    }
    results = {}
    for name, p in procs.items():
        out, err = p.communicate(timeout=540)
        lines = out.splitlines()
        for ln in lines:
            if not ln.startswith("RESULT "):
                print(ln, flush=True)
        res = [ln for ln in lines if ln.startswith("RESULT ")]
        if p.returncode != 0 or not res:
            running = [ln for ln in lines if ln.startswith("RUN ")]
            print(
                f"{name}: CRASH rc={p.returncode} while {running[-1:] or '?'}: {err.strip()[-800:]}",
                flush=True,
            )
            results[name] = {"crash": True, "last": running[-1:] or None, "stderr": err.strip()[-2000:]}
        else:
            results[name] = json.loads(res[-1][7:])
    pp = [
        subprocess.Popen(
            [sys.executable, __file__, "--probe", str(i)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(0 if args.no_probes else len(PROBES))
    ]
    for (kernel, cfg, dk), p in zip(PROBES[: len(pp)], pp, strict=True):
        stdout, stderr = p.communicate(timeout=240)
        res = [ln for ln in stdout.splitlines() if ln.startswith("RESULT ")]
        if p.returncode != 0 or not res:
            tail = [ln for ln in stderr.splitlines() if "Error" in ln][-1:]
            out = {"crash": True, "error": tail}
        else:
            out = json.loads(res[-1][7:])
        print(f"probe {kernel} {cfg} K={dk}: {out}", flush=True)
        results[f"probe {kernel} {cfg} K={dk}"] = out
    name = "gated_delta_config_sweep" + ("-" + "-".join(kernels) if args.kernels else "") + ".json"
    with open(os.path.join(args.out, name), "w") as f:
        json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
