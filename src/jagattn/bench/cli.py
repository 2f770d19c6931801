"""``jagattn bench``: the suites of BENCHMARKS.md against every installed peer.

Entry points for ``python -m jagattn bench ...`` and the ``jagattn`` console script:

- :func:`main` ``(argv) -> int`` parses the arguments after ``bench`` and runs;
- :func:`add_arguments` ``(parser)`` + :func:`run` ``(args, argv) -> int`` for an argparse
  sub-command.

Exit status: 0 when every usable result passed the correctness gate, 1 when some implementation
failed it (or raised), 2 on bad arguments.
"""

from __future__ import annotations

import argparse
import os
import sys
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
    from .progress import Progress

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
    total = sum(len(plan[r.family][0]) for r in rows)
    results = []
    t_start = time.perf_counter()
    skipped: list[str] = []
    with Progress(total, enabled=args.progress) as progress:
        for r in rows:
            its, notes = plan[r.family]
            if args.time_budget is not None and time.perf_counter() - t_start > args.time_budget:
                skipped.append(r.key)
                progress.advance(len(its))
                continue
            try:
                res = harness.run_row(r, its, settings, progress, notes)
            except Exception as exc:  # one broken row must not lose the others
                import traceback

                progress.log(f"{r.key}: row failed\n{traceback.format_exc()}")
                res = {"family": r.family, "row": r.name, "error": f"{type(exc).__name__}: {exc}"}
                progress.advance(len(its))
            results.append(res)
            if args.json:  # written after every row, so a run cut short still leaves its data
                doc["rows"] = [x for x in results if "impls" in x]
                doc["failed_rows"] = [x for x in results if "impls" not in x]
                report.write_json(args.json, doc)
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
    if skipped:
        print(f"rows skipped (--time-budget {args.time_budget:g}s reached): {', '.join(skipped)}")
    bad = [
        f"{r['family']}/{r['row']}:{n}"
        for r in good
        for n, e in r["impls"].items()
        if e.get("status") in ("FAILED", "error") or e.get("gate") == "FAIL"
    ]
    if bad:
        print(f"\nfailing implementations: {', '.join(bad)}")
    return 1 if bad or doc["failed_rows"] else 0


if __name__ == "__main__":
    sys.exit(main())
