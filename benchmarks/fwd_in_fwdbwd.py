"""Is the forward kernel slower inside forward + backward than alone, and is the SM clock why? (issue #5)

The suite's backward is ``do_bench(fwd + bwd) - do_bench(fwd)``. Session 44 round 1 traced ctx6-w256: our forward
kernel took 0.664 ms inside the forward + backward repetitions against 0.596 ms for the forward alone, so ~0.06 ms
of the row's "backward" (1.710 ms) was the forward running slower. Per row and implementation this prints, from
device traces of do_bench runs (as the suite: L2 flush, gradients reset), each kernel's median duration in the
forward-only run and in the forward + backward run, with the SM clock and power sampled by ``nvidia-smi`` (every
20 ms) during each run, and which clock-event reasons (power cap, power brake, thermal) were active.

Usage on the GPU machine: ``PYTHONPATH=src:peers/gr python3 benchmarks/fwd_in_fwdbwd.py --rows ctx6-w256,B256-N1024
[--impls triton,gr_triton] [--rep-ms 400]``
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import tempfile

os.environ.setdefault("JAGATTN_AUTOTUNE", "0")

import torch  # noqa: E402
from host_vs_kernel import row_calls  # noqa: E402  (benchmarks/, the script's folder)
from triton.testing import do_bench  # noqa: E402


def _reason_fields() -> str:
    """The clock-event reason fields this driver's nvidia-smi knows (``clocks_event_reasons`` since driver 535, before
    that ``clocks_throttle_reasons``)."""
    names = ("active", "sw_power_cap", "hw_slowdown", "hw_power_brake_slowdown", "sw_thermal_slowdown",
             "hw_thermal_slowdown")  # fmt: skip
    for prefix in ("clocks_event_reasons", "clocks_throttle_reasons"):
        q = ",".join(f"{prefix}.{n}" for n in names)
        r = subprocess.run(["nvidia-smi", f"--query-gpu={q}", "--format=csv"], capture_output=True, text=True)
        if r.returncode == 0:
            return q
    raise SystemExit("nvidia-smi knows neither clocks_event_reasons nor clocks_throttle_reasons")


_REASONS = ""


def _profiled(fn, grads, rep_ms: int) -> tuple[float, dict[str, float], str]:
    """do_bench median, per-kernel median durations (ms) past the warm-up, and the clock / power summary."""
    from torch.profiler import ProfilerActivity, profile

    smi = subprocess.Popen(
        [
            "nvidia-smi",
            f"--query-gpu=clocks.sm,power.draw,temperature.gpu,{_REASONS}",
            "--format=csv,noheader,nounits",
            "-lms",
            "20",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            t = do_bench(fn, warmup=25, rep=rep_ms, grad_to_none=grads or None, return_mode="median")
            torch.cuda.synchronize()
    finally:
        smi.terminate()
        samples = smi.communicate()[0]
    rows, reasons = [], {}
    for line in samples.splitlines():
        with contextlib.suppress(ValueError):
            f = [x.strip() for x in line.split(",")]
            rows.append([float(x) for x in f[:3]])
            # which clock-event reasons were active (nvidia-smi prints "Active" / "Not Active" per reason)
            for name, val in zip(_REASONS.split(",")[1:], f[4:], strict=False):
                if val == "Active":
                    reasons[name.split(".")[-1]] = reasons.get(name.split(".")[-1], 0) + 1
            reasons["mask " + f[3]] = reasons.get("mask " + f[3], 0) + 1
    n_all = len(rows)
    rows = rows[len(rows) // 4 :]
    clk = (
        f"sm MHz med {statistics.median(r[0] for r in rows):.0f} min {min(r[0] for r in rows):.0f}, "
        f"W med {statistics.median(r[1] for r in rows):.0f} max {max(r[1] for r in rows):.0f}, "
        f"C {rows[-1][2]:.0f} ({len(rows)} samples; reasons over all {n_all}: {reasons})"
        if rows
        else "no nvidia-smi samples"
    )
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "t.json")
        prof.export_chrome_trace(path)
        with open(path) as f:
            events = json.load(f)["traceEvents"]
    kernels = sorted((e for e in events if e.get("cat") == "kernel"), key=lambda e: e["ts"])
    per: dict[str, list[float]] = {}
    for e in kernels:
        if "elementwise" in e["name"] and e["dur"] > 30:  # the flush
            continue
        per.setdefault(e["name"][:48], []).append(e["dur"] / 1e3)
    med = {k: statistics.median(v[len(v) // 4 :]) for k, v in per.items() if len(v) > 8}
    return t, med, clk


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", default="ctx6-w256,B256-N1024")
    ap.add_argument("--impls", default="triton,gr_triton")
    ap.add_argument("--rep-ms", type=int, default=400)
    args = ap.parse_args()
    global _REASONS
    _REASONS = _reason_fields()
    limits = subprocess.run(
        ["nvidia-smi", "--query-gpu=power.limit,enforced.power.limit,power.max_limit", "--format=csv"],
        capture_output=True,
        text=True,
    )
    print(f"power limits: {limits.stdout.strip()}", flush=True)
    for row, impl, fwd, fwdbwd, grads in row_calls("hstu", args.rows, args.impls):
        name = row.name.split("/")[-1]
        for phase, fn, gr in (("fwd", fwd, []), ("fwdbwd", fwdbwd, grads), ("fwd again", fwd, [])):
            t, med, clk = _profiled(fn, gr, args.rep_ms)
            ks = ", ".join(f"{k} {v:.3f}" for k, v in med.items())
            print(f"{name:>12} {impl:>10} {phase:>9}: do_bench {t:.3f} ms; {clk}; kernels {ks}", flush=True)


if __name__ == "__main__":
    main()
