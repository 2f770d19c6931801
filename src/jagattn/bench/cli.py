"""``jagattn bench``: the suites of BENCHMARKS.md against every installed peer.

Entry points for ``python -m jagattn bench ...`` and the ``jagattn`` console script:

- :func:`main` ``(argv) -> int`` parses the arguments after ``bench`` and runs;
- :func:`add_arguments` ``(parser)`` + :func:`run` ``(args, argv) -> int`` for an argparse
  sub-command.

Exit status: 0 when every usable result passed the correctness gate, 1 when some implementation
failed it (or raised), 2 on bad arguments, 3 when an implementation broke the CUDA context (an
illegal memory access, a device-side assert) and the rows after it could not run (``--isolate``
runs each family in child processes and carries on without the implementation that did it).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence

DTYPES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}
MODES = ("fwd", "bwd", "fwdbwd")


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Add the ``bench`` options to ``p``."""
    p.add_argument(
        "--family",
        default="all",
        help="attention, hstu, gated_delta, a comma list of them, or all (default)",
    )
    p.add_argument(
        "--suite",
        default="default",
        help="default (the rows of BENCHMARKS.md), smoke (tiny, CPU-friendly), or a comma list of row "
        "names (e.g. causal-mean8192-hkv4, hstu/B64-N4096); --list shows them",
    )
    p.add_argument(
        "--backends",
        default="all",
        help="comma list of implementations: jagattn backends (triton, reference, ...; or 'jagattn' for all) "
        "and peers (torch_varlen, flex, flash_attn, fla, gr_triton; or 'peers'); 'family:word' limits a word to "
        "one family (e.g. attention:triton,reference,peers); default all",
    )
    p.add_argument(
        "--mode", choices=MODES, default="fwdbwd", help="what the table shows (default fwdbwd: all)"
    )
    p.add_argument(
        "--dtype",
        choices=sorted(DTYPES),
        default=None,
        help="default bf16 on a GPU, fp16 on a CPU (Triton's interpreter computes tl.dot on bf16 wrongly)",
    )
    p.add_argument("--device", default=None, help="cuda or cpu (default: cuda if available)")
    p.add_argument("--json", default=None, metavar="PATH", help="write results with provenance here")
    p.add_argument(
        "--plot", default=None, metavar="PATH", help="write a PNG of the rates here (needs matplotlib)"
    )
    p.add_argument(
        "--check",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="run the correctness gate before timing (default on)",
    )
    p.add_argument(
        "--timing",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="time the implementations (--no-timing: correctness gate only, e.g. in CPU CI)",
    )
    p.add_argument(
        "--check-tokens",
        type=int,
        default=None,
        help="token budget of the gold reference per row (default per family on a GPU; everything on a CPU)",
    )
    p.add_argument(
        "--ref-max-tokens",
        type=int,
        default=4096,
        help="do not time the reference backend on rows with more tokens than this (default 4096)",
    )
    p.add_argument("--warmup-ms", type=float, default=25.0, help="do_bench warm-up (ms)")
    p.add_argument("--rep-ms", type=float, default=100.0, help="do_bench repetition time (ms)")
    p.add_argument("--cpu-reps", type=int, default=3, help="timed calls per phase on a CPU")
    p.add_argument("--tol-max", type=float, default=None, help="override the gate's max_rel tolerance")
    p.add_argument("--tol-rms", type=float, default=None, help="override the gate's rms_rel tolerance")
    p.add_argument(
        "--time-budget",
        type=float,
        default=None,
        metavar="SECONDS",
        help="start no new row after this many seconds; the rest are listed as skipped (for leased GPUs)",
    )
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=True, help="progress display")
    p.add_argument(
        "--isolate",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="run each family in a child process; when an implementation kills it or breaks the CUDA "
        "context (illegal memory access), record that in its column and rerun the remaining rows "
        "without it, so one crashing peer cannot lose the others' results",
    )
    p.add_argument("--list", action="store_true", help="list the suite rows and implementations, run nothing")


def main(argv: Sequence[str] | None = None) -> int:
    """``jagattn bench [options]``; ``argv`` excludes the word ``bench``. Returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(
        prog="jagattn bench",
        description="Benchmark jagattn against its peers on the suites of BENCHMARKS.md: correctness "
        "gate first, then do_bench medians, TFLOP/s, speedup vs the best peer, peak memory.",
    )
    add_arguments(parser)
    args = parser.parse_args(argv)
    return run(args, argv)


def _families(spec: str) -> list[str]:
    from .suites import FAMILIES

    if spec == "all":
        return list(FAMILIES)
    fams = [f.strip() for f in spec.split(",") if f.strip()]
    for f in fams:
        if f not in FAMILIES:
            raise ValueError(f"--family: unknown family {f!r}; choose from {list(FAMILIES)} or 'all'")
    return fams


def run(args: argparse.Namespace, argv: Sequence[str] = ()) -> int:
    """Run the benchmark described by parsed ``args`` (see :func:`add_arguments`)."""
    try:
        import torch
    except ImportError as exc:  # pragma: no cover
        print(f"jagattn bench: torch is required ({exc})", file=sys.stderr)
        return 2
    from . import harness, impls, report, suites

    try:
        families = _families(args.family)
        rows = suites.select_rows(families, args.suite)
        device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
        if device.type == "cuda" and not torch.cuda.is_available():
            raise ValueError("--device: cuda requested but torch sees no CUDA device")
        plan = {}
        for fam in dict.fromkeys(r.family for r in rows):
            plan[fam] = impls.resolve(fam, args.backends)
    except ValueError as exc:
        print(f"jagattn bench: {exc}", file=sys.stderr)
        return 2
    if args.list:
        for r in rows:
            print(f"{r.key:<36} {r.about}")
        for fam, (its, notes) in plan.items():
            print(
                f"{fam}: " + ", ".join(f"{i.name} ({i.kind})" for i in its) + "".join(f"; {n}" for n in notes)
            )
        return 0
    if device.type == "cpu" and os.environ.get("TRITON_INTERPRET") != "1":
        print(
            "jagattn bench: no GPU: Triton backends need TRITON_INTERPRET=1 (set before the run) to run on "
            "the CPU; others are reported n/a",
            file=sys.stderr,
        )
    if args.dtype is None:
        args.dtype = "bf16" if device.type == "cuda" else "fp16"
    elif args.dtype == "bf16" and device.type == "cpu" and os.environ.get("TRITON_INTERPRET") == "1":
        print(
            "jagattn bench: warning: Triton's interpreter computes tl.dot on bf16 inputs wrongly (seen with "
            "triton 3.9: errors ~1e9); Triton backends will fail the gate on the CPU; use --dtype fp16",
            file=sys.stderr,
        )
    dtype = getattr(torch, DTYPES[args.dtype])
    modes = ("fwd",) if args.mode == "fwd" else ("fwd", "fwdbwd")
    settings = harness.Settings(
        device=device,
        dtype=dtype,
        modes=modes,
        check=args.check,
        timing=args.timing,
        check_tokens=args.check_tokens,
        ref_max_tokens=args.ref_max_tokens,
        warmup_ms=args.warmup_ms,
        rep_ms=args.rep_ms,
        cpu_reps=args.cpu_reps,
        tol_max=args.tol_max,
        tol_rms=args.tol_rms,
    )
    phases = report.phases_shown(modes, args.mode)
    peer_versions = {}
    for its, _ in plan.values():
        for it in its:
            if it.kind == "peer":
                why = it.unavailable_reason()
                peer_versions[f"{it.family}/{it.name}"] = it.version() if not why else f"n/a ({why})"
    meta = {"dtype": args.dtype, "device": str(device), "tol": settings.tolerances()}
    prov = report.provenance(argv, device, peer_versions)
    doc = {
        "provenance": prov,
        "settings": {
            "families": families,
            "suite": args.suite,
            "backends": args.backends,
            "mode": args.mode,
            "dtype": args.dtype,
            "check": args.check,
            "timed": args.timing,
            "check_tokens": args.check_tokens,
            "ref_max_tokens": args.ref_max_tokens,
            "warmup_ms": args.warmup_ms,
            "rep_ms": args.rep_ms,
            "tolerance": {"max_rel": meta["tol"][0], "rms_rel": meta["tol"][1]},
            "timing_method": "triton.testing.do_bench(return_mode='median') after a warm-up call"
            if device.type == "cuda"
            else f"wall-clock median of {args.cpu_reps} calls (no warm-up call on a CPU)",
            "fwd_timing": "forward with inputs that require grad (the training forward)",
            "bwd": "fwd+bwd minus fwd",
        },
        "rows": [],
    }
    t_start = time.perf_counter()
    if args.isolate:
        results, skipped, lost = _run_isolated(args, rows, plan, doc)
    else:
        results, skipped, lost = _run_rows(args, rows, plan, settings, doc, t_start)
    if lost:
        doc["device_lost"] = lost
    return _finish(args, doc, results, skipped, lost, phases, prov, meta, t_start, report)


def _run_rows(args, rows, plan, settings, doc, t_start):
    """Measure ``rows`` in this process. Returns (results, skipped row keys, device-lost info)."""
    from . import clocks, report

    total = sum(len(plan[r.family][0]) for r in rows)
    results = []
    skipped: list[str] = []
    # each timed phase's SM clock and power-cap share (clocks.py): sampled in the background, filled in at the end
    sampler = clocks.Sampler()
    if settings.timing:
        sampler.start(settings.device)
    else:
        sampler.why_not = "--no-timing"
    doc["clock_sampling"] = sampler.why_not or f"nvidia-smi every {sampler.interval_ms} ms"
    try:
        lost = _rows_loop(args, rows, plan, settings, doc, t_start, total, results, skipped)
    finally:
        sampler.fill(results)
    if lost and args.json:
        doc["device_lost"] = lost
        doc["skipped_rows"] = skipped
        report.write_json(args.json, doc)
    return results, skipped, lost


def _rows_loop(args, rows, plan, settings, doc, t_start, total, results, skipped) -> dict | None:
    """``_run_rows``'s loop: fills ``results`` and ``skipped``; the device-lost info if the CUDA context broke."""
    from . import harness, report
    from .progress import Progress

    lost = None
    with Progress(total, enabled=args.progress) as progress:
        for i, r in enumerate(rows):
            its, notes = plan[r.family]
            if args.time_budget is not None and time.perf_counter() - t_start > args.time_budget:
                skipped.append(r.key)
                progress.advance(len(its))
                continue
            try:
                res = harness.run_row(r, its, settings, progress, notes)
            except harness.DeviceLost as exc:
                lost = exc.info
                progress.log(
                    f"{r.key}: {lost['impl']} broke the CUDA context during {lost['stage']} "
                    f"({lost['error']}); nothing more can run in this process"
                )
                skipped.extend(x.key for x in rows[i:])
                break
            except Exception as exc:  # one broken row must not lose the others
                if harness.is_fatal(exc):  # surfaced outside an implementation's own stage
                    lost = {
                        "row": r.key,
                        "impl": None,
                        "stage": "row",
                        "error": f"{type(exc).__name__}: {exc}",
                    }
                    progress.log(f"{r.key}: the CUDA context is lost ({lost['error'][:200]})")
                    skipped.extend(x.key for x in rows[i:])
                    break
                import traceback

                progress.log(f"{r.key}: row failed\n{traceback.format_exc()}")
                res = {"family": r.family, "row": r.name, "error": f"{type(exc).__name__}: {exc}"}
                progress.advance(len(its))
            results.append(res)
            if args.json:  # written after every row, so a run cut short still leaves its data
                doc["rows"] = [x for x in results if "impls" in x]
                doc["failed_rows"] = [x for x in results if "impls" not in x]
                report.write_json(args.json, doc)
    return lost


def _child_argv(
    args: argparse.Namespace, family: str, row_names: list[str], backends: str, budget
) -> list[str]:
    a = [sys.executable, "-m", "jagattn", "bench", "--family", family, "--suite", ",".join(row_names)]
    a += ["--backends", backends, "--mode", args.mode, "--dtype", args.dtype, "--no-isolate"]
    a += [
        "--warmup-ms",
        repr(args.warmup_ms),
        "--rep-ms",
        repr(args.rep_ms),
        "--cpu-reps",
        str(args.cpu_reps),
    ]
    a += ["--ref-max-tokens", str(args.ref_max_tokens)]
    a += ["--check" if args.check else "--no-check", "--timing" if args.timing else "--no-timing"]
    a += ["--progress" if args.progress else "--no-progress"]
    for flag, value in (
        ("--device", args.device),
        ("--check-tokens", args.check_tokens),
        ("--tol-max", args.tol_max),
        ("--tol-rms", args.tol_rms),
        ("--time-budget", None if budget is None else max(budget, 0.0)),
    ):
        if value is not None:
            a += [flag, str(value)]
    return a


def _exit_text(rc: int) -> str:
    if rc < 0:
        import signal

        try:
            return f"signal {signal.Signals(-rc).name}"
        except ValueError:
            return f"signal {-rc}"
    return f"exit status {rc}"


def _run_isolated(args, rows, plan, doc):
    """``--isolate``: each family's rows run in child processes (``--no-isolate``); when a child
    dies or reports a lost CUDA context, the implementation that was running is recorded as
    crashed and the remaining rows are rerun in a fresh child without it."""
    from .harness import MARKER_ENV

    results: list[dict] = []
    skipped: list[str] = []
    crashes: list[dict] = []
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="jagattn-bench-") as tmp:
        for fam in dict.fromkeys(r.family for r in rows):
            its = plan[fam][0]
            fam_rows = [r for r in rows if r.family == fam]
            done: dict[str, dict] = {}
            excluded: dict[str, dict] = {}
            attempt = 0
            while True:
                remaining = [r for r in fam_rows if r.name not in done]
                left = [it for it in its if it.name not in excluded]
                if not remaining or not left:
                    break
                budget = None if args.time_budget is None else args.time_budget - (time.perf_counter() - t0)
                if budget is not None and budget <= 0:
                    skipped.extend(r.key for r in remaining)
                    break
                attempt += 1
                out = os.path.join(tmp, f"{fam}-{attempt}.json")
                marker = os.path.join(tmp, f"{fam}-{attempt}.marker")
                argv = _child_argv(
                    args,
                    fam,
                    [r.name for r in remaining],
                    ",".join(f"{fam}:{it.name}" for it in left),
                    budget,
                )
                argv += ["--json", out]
                print(f"jagattn bench --isolate: {fam}, child {attempt}: {len(remaining)} rows, "
                      f"{', '.join(it.name for it in left)}", file=sys.stderr, flush=True)  # fmt: skip
                rc = subprocess.call(argv, env={**os.environ, MARKER_ENV: marker})
                child: dict = {}
                if os.path.exists(out):
                    with open(out) as f:
                        child = json.load(f)
                for x in child.get("rows", []) + child.get("failed_rows", []):
                    done[x["row"]] = x
                lost = child.get("device_lost")
                m: dict = {}
                if os.path.exists(marker):  # the stage that was running last
                    with open(marker) as f:
                        m = json.load(f)
                if lost is None and rc not in (0, 1):
                    lost = {**{"row": None, "impl": None, "stage": None}, **m}
                    lost["error"] = f"the process died ({_exit_text(rc)})"
                elif lost is not None and lost.get("impl") is None and m.get("row") == lost.get("row"):
                    # the error surfaced after a stage (CUDA errors are asynchronous): blame the last one
                    lost = {**lost, "impl": m.get("impl"), "stage": f"{m.get('stage')} (reported later)"}
                if lost is None:
                    skipped.extend(child.get("skipped_rows", []))
                    break
                crashes.append({"family": fam, **lost})
                names = {it.name for it in its}
                row_name = next((r.name for r in fam_rows if r.key == lost.get("row")), None)
                if row_name is None:  # died before any row started: nothing left to learn by retrying
                    for r in remaining:
                        done[r.name] = {
                            "family": fam,
                            "row": r.name,
                            "error": f"child process: {lost['error']}",
                        }
                elif lost.get("impl") in names:
                    excluded[lost["impl"]] = lost
                else:  # the gold reference or the row's build: this row cannot be measured
                    done[row_name] = {
                        "family": fam,
                        "row": row_name,
                        "error": f"{lost.get('impl') or 'row setup'} crashed during {lost.get('stage')}: "
                        f"{lost['error']}",
                    }
            for name, info in excluded.items():
                first = next(i for i, r in enumerate(fam_rows) if r.key == info["row"])
                it = next(i for i in its if i.name == name)
                for r in fam_rows[first:]:
                    x = done.get(r.name)
                    if not x or "impls" not in x:
                        continue
                    reason = (
                        f"crashed during {info['stage']}: {info['error']} (this row reran without it)"
                        if r.key == info["row"]
                        else f"not run: it crashed the benchmark process on {info['row']}"
                    )
                    x["impls"][name] = {
                        "kind": it.kind,
                        "label": "",
                        "note": "",
                        "status": "error",
                        "reason": reason,
                    }
                    x["impls"] = {i.name: x["impls"][i.name] for i in its if i.name in x["impls"]}
            results.extend(done[r.name] for r in fam_rows if r.name in done)
    doc["isolated"] = {"crashes": crashes}
    return results, skipped, None


def _finish(args, doc, results, skipped, lost, phases, prov, meta, t_start, report) -> int:
    good = [x for x in results if "impls" in x]
    summary = report.finalize(good, phases)
    doc["rows"] = good
    doc["failed_rows"] = [x for x in results if "impls" not in x]
    doc["summary"] = summary
    doc["skipped_rows"] = skipped
    doc["elapsed_s"] = round(time.perf_counter() - t_start, 1)
    if args.plot:
        suite = args.suite if len(args.suite) <= 40 else f"{len(good)} rows"
        title = f"jagattn bench {suite} {args.dtype} on {prov.get('gpu') or 'CPU'} ({prov['date_utc']})"
        why = report.write_png(args.plot, good, phases, title)
        doc["plot"] = None if why else str(args.plot)
        if why:
            print(f"jagattn bench: no PNG written: {why}", file=sys.stderr)
    if args.json:
        report.write_json(args.json, doc)
    print(report.format_table(good, summary, phases, meta))
    for x in doc["failed_rows"]:
        print(f"row {x['family']}/{x['row']} failed: {x['error']}")
    if lost:
        print(
            f"\n{lost['impl']} broke the CUDA context on {lost['row']} during {lost['stage']}: {lost['error']}\n"
            f"rows not run after it: {', '.join(skipped)}\n"
            "(--isolate runs each family in child processes and carries on without the implementation "
            "that did it)"
        )
    elif skipped:
        print(f"rows skipped (--time-budget {args.time_budget:g}s reached): {', '.join(skipped)}")
    bad = [
        f"{r['family']}/{r['row']}:{n}"
        for r in good
        for n, e in r["impls"].items()
        if e.get("status") in ("FAILED", "error") or e.get("gate") == "FAIL"
    ]
    if bad:
        print(f"\nfailing implementations: {', '.join(bad)}")
    if lost:
        return 3
    return 1 if bad or doc["failed_rows"] else 0


if __name__ == "__main__":
    sys.exit(main())
