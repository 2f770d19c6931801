"""Rates, speedups, the printed table, the JSON with provenance and the PNG.

Speedup of an implementation on a row = (fastest peer's time) / (its time), per phase, where
only peers that did not fail the correctness gate (or raise) count as "fastest peer". An
implementation that failed the gate is printed as ``FAILED`` with its time in brackets and is
never used for a speedup or a geometric mean.
"""

from __future__ import annotations

import datetime
import math
import os
import platform
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from . import clocks

USABLE = ("ok", "unchecked")


def phases_shown(modes: Sequence[str], requested: str) -> list[str]:
    """Phases the table shows: ``fwd``; ``bwd`` (fwd+bwd minus fwd); or fwd, bwd and fwd+bwd."""
    if requested == "fwd":
        return ["fwd"]
    if requested == "bwd":
        return ["bwd"]
    return ["fwd", "bwd", "fwdbwd"]


def _rate(row: dict[str, Any], phase: str, ms: float) -> float | None:
    if ms is None or ms <= 0:
        return None
    if row["rate_unit"] == "Mtok/s":
        return row["tokens"] / (ms * 1e-3) / 1e6
    f = row["flops"].get(phase)
    return f / (ms * 1e-3) / 1e12 if f else None


def finalize(rows: list[dict[str, Any]], phases: Sequence[str]) -> dict[str, Any]:
    """Add ``rate`` and ``speedup_vs_best_peer`` to every entry; return the per-family summary."""
    for row in rows:
        impls = row["impls"]
        best: dict[str, tuple[str, float]] = {}
        for ph in ("fwd", "bwd", "fwdbwd"):
            cands = [
                (name, e["ms"][ph])
                for name, e in impls.items()
                if e["kind"] == "peer"
                and e.get("status") in USABLE
                and (e.get("ms") or {}).get(ph) is not None
            ]
            if cands:
                best[ph] = min(cands, key=lambda c: c[1])
        row["best_peer"] = {ph: {"impl": n, "ms": t} for ph, (n, t) in best.items()}
        for e in impls.values():
            ms = e.get("ms") or {}
            e["rate"] = {ph: _rate(row, ph, t) for ph, t in ms.items()}
            if row["rate_unit"] == "Mtok/s" and "fwd" in ms:
                e["tflops_fwd_convention"] = _rate({**row, "rate_unit": "TFLOP/s"}, "fwd", ms["fwd"])
            if row["family"] == "hstu":
                pc = row["flops"]["peer_convention"]
                e["tflops_peer_convention"] = {
                    ph: (pc[ph] / (t * 1e-3) / 1e12 if t and t > 0 else None) for ph, t in ms.items()
                }
            e["speedup_vs_best_peer"] = {
                ph: (
                    best[ph][1] / ms[ph] if ph in best and e.get("status") in USABLE and ms[ph] > 0 else None
                )
                for ph in ms
            }
    summary: dict[str, Any] = {}
    for fam in dict.fromkeys(r["family"] for r in rows):
        fam_rows = [r for r in rows if r["family"] == fam]
        names = list(dict.fromkeys(n for r in fam_rows for n in r["impls"]))
        out = {}
        for name in names:
            s: dict[str, Any] = {"kind": None, "speedup_geomean": {}, "rate_geomean": {}, "rows": {}}
            for ph in phases:
                sp, rt = [], []
                for r in fam_rows:
                    e = r["impls"].get(name)
                    if not e:
                        continue
                    s["kind"] = e["kind"]
                    if e.get("status") not in USABLE:
                        continue
                    if (e.get("speedup_vs_best_peer") or {}).get(ph):
                        sp.append(e["speedup_vs_best_peer"][ph])
                    if (e.get("rate") or {}).get(ph):
                        rt.append(e["rate"][ph])
                s["speedup_geomean"][ph] = _geomean(sp)
                s["rate_geomean"][ph] = _geomean(rt)
                s["rows"][ph] = len(rt)
            out[name] = s
        summary[fam] = {"rate_unit": fam_rows[0]["rate_unit"], "impls": out}
    return summary


def _geomean(xs: list[float]) -> float | None:
    xs = [x for x in xs if x and x > 0 and math.isfinite(x)]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


# ---------------------------------------------------------------------------------------------
# the table


def _f(x: float | None, fmt: str = "{:.3f}") -> str:
    return "-" if x is None else fmt.format(x)


def _check_cell(e: dict[str, Any]) -> str:
    if "gate" not in e:
        return "unchecked"
    if "max_abs" not in e:
        return e["gate"]
    return f"{e['gate']} {e['max_abs']:.1e}/{e['max_rel']:.1e}"


def _name_cell(name: str, e: dict[str, Any]) -> str:
    tag = "" if e["kind"] == "jagattn" else "*"
    lab = f" [{e['label']}]" if e.get("label") else ""
    return f"{name}{tag}{lab}"


def format_table(
    rows: list[dict[str, Any]], summary: dict[str, Any], phases: Sequence[str], meta: dict
) -> str:
    lines: list[str] = []
    for fam in summary:
        fam_rows = [r for r in rows if r["family"] == fam]
        unit = summary[fam]["rate_unit"]
        lines.append("")
        lines.append(f"== {fam} ({meta['dtype']}, {meta['device']}) ==")
        lines.append("   " + fam_rows[0]["flops"].get("convention", ""))
        head = f"  {'impl':<26} {'check max_abs/max_rel':<22}"
        for ph in phases:
            head += f" {ph + ' ms':>10}"
        for ph in phases:
            head += f" {ph + ' ' + unit:>13}"
        for ph in phases:
            head += f" {'x' + ph:>7}"
        head += f" {'peak MiB':>9}"
        for r in fam_rows:
            lines.append(f"{r['row']}: {r['config']}")
            extra = []
            if fam == "hstu":
                fl = r["flops"]
                ratio = fl["pairs_peer_convention"] / fl["pairs"] if fl["pairs"] else float("nan")
                extra.append(f"P exact={fl['pairs']:.4g} (peer convention sum n^2/2 = {ratio:.3f}x exact)")
            ck = r.get("check", {})
            if ck.get("ran"):
                extra.append(f"checked: {ck['compared']}")
            elif ck.get("why_not"):
                extra.append(f"not checked: {ck['why_not']}")
            for n in r.get("notes", []):
                extra.append(n)
            for x in extra:
                lines.append(f"    {x}")
            lines.append(head)
            for name, e in r["impls"].items():
                st = e.get("status")
                cell = _name_cell(name, e)
                if st in ("n/a", "error", "not timed") and not e.get("ms"):
                    lines.append(f"  {cell:<26} {st} ({e.get('reason', '')})")
                    continue
                line = f"  {cell:<26} {_check_cell(e):<22}"
                ms = e.get("ms") or {}
                for ph in phases:
                    t = ms.get(ph)
                    txt = _f(t)
                    if st == "FAILED" and t is not None:
                        txt = f"FAIL({t:.3g})"
                    line += f" {txt:>10}"
                for ph in phases:
                    rt = None if st == "FAILED" else (e.get("rate") or {}).get(ph)
                    line += f" {_f(rt, '{:.4g}'):>13}"
                for ph in phases:
                    sp = (e.get("speedup_vs_best_peer") or {}).get(ph)
                    line += f" {_f(sp, '{:.2f}x'):>7}"
                line += f" {_f(e.get('peak_mib'), '{:.0f}'):>9}"
                if st == "error":
                    line += f"  error: {e.get('reason', '')}"
                lines.append(line)
                if e.get("note"):
                    lines.append(f"      note: {e['note']}")
                if e.get("clock"):
                    lines.append(f"      {clocks.describe(e['clock'])}")
        lines.append(f"-- {fam}: geometric means over rows (usable results only) --")
        for name, s in summary[fam]["impls"].items():
            if not any(s["rate_geomean"].get(ph) for ph in phases):
                continue
            parts = []
            for ph in phases:
                parts.append(
                    f"{ph}: {_f(s['rate_geomean'].get(ph), '{:.4g}')} {unit}, "
                    f"{_f(s['speedup_geomean'].get(ph), '{:.2f}x')} vs best peer ({s['rows'].get(ph, 0)} rows)"
                )
            tag = "" if s["kind"] == "jagattn" else "*"
            lines.append(f"  {name + tag:<16} " + "; ".join(parts))
    lines.append("")
    lines.append(
        "* = peer. check = correctness gate vs the fp32/fp64 reference (o and every input gradient when "
        "the backward is measured): max_abs and max_rel = max|out-ref| / max|ref| over the compared tensors; "
        f"gate: max_rel <= {meta['tol'][0]:g} and rms_rel <= {meta['tol'][1]:g} per tensor. "
        "x<phase> = fastest usable peer's time / this time. bwd = (fwd+bwd) - fwd. "
        "Times: triton.testing.do_bench median (CUDA) or wall-clock median (CPU)."
    )
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# provenance, JSON, PNG


def _git_sha() -> str:
    env = os.environ.get("JAGATTN_GIT_SHA")
    if env:
        return env
    here = Path(__file__).resolve().parent
    try:
        sha = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True, timeout=10
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=here,
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
        return (sha + ("-dirty" if dirty else "")) if sha else "unknown"
    except Exception:
        return "unknown"


def provenance(argv: Sequence[str], device: torch.device, peers: dict[str, str]) -> dict[str, Any]:
    import jagattn

    try:
        import triton

        triton_v = triton.__version__
    except Exception as exc:
        triton_v = f"not importable ({type(exc).__name__})"
    info: dict[str, Any] = {
        "date_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": "jagattn bench " + " ".join(argv),
        "jagattn": jagattn.__version__,
        "git_sha": _git_sha(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "triton": triton_v,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "device": str(device),
        # every jagattn knob that is set (JAGATTN_AUTOTUNE, the per-family experiment variables, ...)
        # and the Triton interpreter switch: a result is only reproducible with them
        "env": {
            k: v for k, v in sorted(os.environ.items()) if k.startswith("JAGATTN_") or k == "TRITON_INTERPRET"
        },
        "peers": peers,
    }
    if device.type == "cuda":
        p = torch.cuda.get_device_properties(device)
        info.update(
            gpu=p.name,
            gpu_capability=f"sm_{p.major}{p.minor}",
            gpu_sms=p.multi_processor_count,
            gpu_memory_gib=round(p.total_memory / 2**30, 1),
        )
    else:
        info["gpu"] = None
        info["cpu"] = platform.processor() or platform.machine()
    return info


def _jsonable(x: Any) -> Any:
    if isinstance(x, float):
        return x if math.isfinite(x) else str(x)
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, torch.dtype):
        return str(x).replace("torch.", "")
    return x


def write_json(path: str | Path, doc: dict[str, Any]) -> None:
    import json

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(_jsonable(doc), indent=1, sort_keys=False) + "\n")
    tmp.replace(path)


def write_png(path: str | Path, rows: list[dict[str, Any]], phases: Sequence[str], title: str) -> str | None:
    """Bars of the rate (TFLOP/s; Mtok/s for gated_delta) per row and implementation, one panel per
    family and phase. Returns None, or why no PNG was written (matplotlib missing)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        return f"matplotlib not importable ({exc}); install the 'bench' extra"
    fams = list(dict.fromkeys(r["family"] for r in rows))
    plot_phases = [ph for ph in phases if ph != "fwdbwd"] or list(phases)
    panels = [(f, ph) for f in fams for ph in plot_phases]
    if not panels:
        return "nothing to plot"
    cmap = plt.get_cmap("tab10")
    fig, axes = plt.subplots(len(panels), 1, figsize=(13, 3.4 * len(panels)), squeeze=False)
    for ax, (fam, ph) in zip(axes[:, 0], panels, strict=True):
        fr = [r for r in rows if r["family"] == fam]
        names = list(dict.fromkeys(n for r in fr for n in r["impls"]))
        plotted = [n for n in names if any((r["impls"].get(n) or {}).get("status") in USABLE for r in fr)]
        width = 0.8 / max(1, len(plotted))
        failed = []
        for r in fr:
            failed += [f"{n}@{r['row']}" for n, e in r["impls"].items() if e.get("status") == "FAILED"]
        for i, name in enumerate(plotted):
            xs, ys = [], []
            for j, r in enumerate(fr):
                e = r["impls"].get(name) or {}
                rate = (e.get("rate") or {}).get(ph)
                if e.get("status") in USABLE and rate:
                    xs.append(j + (i - (len(plotted) - 1) / 2) * width)
                    ys.append(rate)
            if not xs:
                continue
            kind = next((r["impls"][name]["kind"] for r in fr if name in r["impls"]), "peer")
            label = name + ("" if kind == "jagattn" else " (peer)")
            ax.bar(
                xs, ys, width=width, label=label, color=cmap(i % 10), hatch="" if kind == "jagattn" else "//",
                edgecolor="white" if kind != "jagattn" else None,
            )  # fmt: skip
        ax.set_xticks(range(len(fr)))
        ax.set_xticklabels([r["row"] for r in fr], rotation=15, ha="right", fontsize=8)
        ax.set_xlim(-0.6, len(fr) - 0.4)
        ax.set_ylabel(fr[0]["rate_unit"])
        t = f"{fam} {ph}" + (" (fwd+bwd minus fwd)" if ph == "bwd" else "")
        if failed:
            t += "  | failed the correctness gate, not plotted: " + ", ".join(sorted(set(failed))[:6])
        ax.set_title(t, fontsize=10)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=8, ncol=min(6, len(plotted)))
        ax.grid(axis="y", alpha=0.3)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 0.985))
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return None


def print_err(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)
