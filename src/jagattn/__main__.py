"""``python -m jagattn {info,explain,demo,bench}`` (also the ``jagattn`` console script)."""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys

DTYPES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32", "fp64": "float64"}


def _cmd_info(args: argparse.Namespace) -> int:
    import torch

    import jagattn
    from jagattn._core.triton_utils import interpreter_enabled, triton_import_error, triton_version

    print(f"jagattn {jagattn.__version__}")
    print(f"python  {platform.python_version()} ({sys.executable})")
    print(f"torch   {torch.__version__}")
    tv = triton_version()
    print(f"triton  {tv if tv else 'not importable: ' + str(triton_import_error())}")
    if torch.cuda.is_available():
        for i in range(torch.cuda.device_count()):
            p = torch.cuda.get_device_properties(i)
            print(
                f"device  cuda:{i} {p.name} (sm_{p.major}{p.minor}, {p.multi_processor_count} SMs, "
                f"{p.total_memory / 2**30:.0f} GiB)"
            )
    else:
        print("device  no CUDA device (CPU only)")
    print(
        f"TRITON_INTERPRET={'1' if interpreter_enabled() else '0'}  "
        f"JAGATTN_BACKEND={os.environ.get('JAGATTN_BACKEND', '') or '(unset)'}  "
        f"JAGATTN_CHECK_INPUTS={os.environ.get('JAGATTN_CHECK_INPUTS', '') or '(unset)'}"
    )
    print()
    rows = jagattn.backend_table()
    wf = max(len(r["family"]) for r in rows)
    wb = max(len(r["backend"]) for r in rows)
    print(f"{'family':<{wf}}  {'backend':<{wb}}  available  notes")
    for r in rows:
        note = r["reason"] if not r["available"] else r["about"]
        print(f"{r['family']:<{wf}}  {r['backend']:<{wb}}  {'yes' if r['available'] else 'no':<9}  {note}")
    return 0


def _add_explain_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("family", choices=["attention", "hstu", "gated_delta"])
    p.add_argument("--device", default=None, help="cuda or cpu (default: cuda if available)")
    p.add_argument("--dtype", choices=sorted(DTYPES), default="bf16")
    p.add_argument("--batch", type=int, default=4, help="number of sequences (equal lengths)")
    p.add_argument("--seqlen", type=int, default=1024, help="length of each sequence")
    p.add_argument(
        "--heads", type=int, default=16, help="query heads (attention), heads (hstu), q/k heads (gated_delta)"
    )
    p.add_argument("--kv-heads", type=int, default=None, help="attention: kv heads; gated_delta: value heads")
    p.add_argument("--dim", type=int, default=128, help="head dim of q/k")
    p.add_argument("--dim-v", type=int, default=None, help="head dim of v (default: --dim)")
    p.add_argument("--causal", action="store_true", help="attention: causal mask")
    p.add_argument("--window", type=int, nargs=2, default=(-1, -1), metavar=("LEFT", "RIGHT"))
    p.add_argument("--softcap", type=float, default=0.0)
    p.add_argument("--targets", type=int, default=0, help="hstu: num_targets per sequence (0 = None)")
    p.add_argument("--contextual", type=int, default=0, help="hstu: contextual_seq_len")
    p.add_argument("--max-attn-len", type=int, default=0, help="hstu: window")
    p.add_argument(
        "--cached",
        type=int,
        default=0,
        metavar="DELTA",
        help="hstu: explain hstu_attention_cached with DELTA query rows per sequence (0 = hstu_attention)",
    )
    p.add_argument("--gk", action="store_true", help="gated_delta: per-key gate")
    p.add_argument("--l2norm", action="store_true", help="gated_delta: use_qk_l2norm")
    p.add_argument("--initial-state", action="store_true", help="gated_delta: pass an initial state")
    p.add_argument("--backward", action="store_true", help="inputs require grad")
    p.add_argument("--backend", default="auto")


def _explain_call(args: argparse.Namespace):
    """Build empty (uninitialised, cheap) tensors of the requested shapes and explain the call."""
    import torch

    import jagattn
    from jagattn._core.varlen import cu_seqlens_from_lengths

    if args.cached < 0:
        raise ValueError(f"--cached: DELTA must be >= 0 (0 = hstu_attention), got {args.cached}")
    if args.cached and args.family != "hstu":
        raise ValueError(f"--cached: only the hstu family has a cached op, not {args.family!r}")
    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    dtype = getattr(torch, DTYPES[args.dtype])
    b, n = args.batch, args.seqlen
    t = b * n
    dv = args.dim_v or args.dim
    cu = cu_seqlens_from_lengths([n] * b, device=device)
    rg = args.backward

    def e(*shape, dt=dtype):
        return torch.empty(shape, dtype=dt, device=device).requires_grad_(rg)

    if args.family == "attention":
        hkv = args.kv_heads or args.heads
        return jagattn.explain(
            "attention",
            e(t, args.heads, args.dim),
            e(t, hkv, args.dim),
            e(t, hkv, dv),
            cu,
            max_seqlen_q=n,
            causal=args.causal,
            window=tuple(args.window),
            softcap=args.softcap,
            backend=args.backend,
        )
    if args.family == "hstu":
        nt = torch.full((b,), args.targets, dtype=torch.int64, device=device) if args.targets else None
        extra = {"cached": True} if args.cached else {}
        return jagattn.explain(
            "hstu",
            e(b * args.cached if args.cached else t, args.heads, args.dim),
            e(t, args.heads, args.dim),
            e(t, args.heads, dv),
            cu,
            n,
            alpha=1.0 / args.dim,
            num_targets=nt,
            contextual_seq_len=args.contextual,
            max_attn_len=args.max_attn_len,
            backend=args.backend,
            **extra,
        )
    hv = args.kv_heads or args.heads
    f32 = torch.float32
    h0 = torch.empty(b, hv, args.dim, dv, dtype=f32, device=device) if args.initial_state else None
    return jagattn.explain(
        "gated_delta",
        e(t, args.heads, args.dim),
        e(t, args.heads, args.dim),
        e(t, hv, dv),
        e(t, hv, dt=f32),
        e(t, hv, dt=f32),
        cu_seqlens=cu,
        initial_state=h0,
        use_qk_l2norm=args.l2norm,
        gk=e(t, hv, args.dim, dt=f32) if args.gk else None,
        backend=args.backend,
    )


def _cmd_explain(args: argparse.Namespace) -> int:
    from jagattn._core.dispatch import NotSupportedError

    try:
        print(_explain_call(args))
    except (ValueError, TypeError, NotSupportedError) as exc:  # a bad option: its message, not a traceback
        print(f"jagattn explain: error: {exc}", file=sys.stderr)
        return 2
    return 0


def _cmd_demo(args: argparse.Namespace) -> int:
    import torch

    # Without a GPU the Triton kernels run under the interpreter, which must be switched on
    # before triton is imported: re-run this command in a child process with it set.
    if not torch.cuda.is_available() and os.environ.get("TRITON_INTERPRET") is None:
        env = dict(os.environ, TRITON_INTERPRET="1")
        child = ["demo", "--seed", str(args.seed)] + (["--device", args.device] if args.device else [])
        return subprocess.call([sys.executable, "-m", "jagattn", *child], env=env)
    from jagattn.demo import run_demo

    return run_demo(device=args.device, seed=args.seed)


def _cmd_bench(argv: list[str]) -> int:
    try:
        from jagattn.bench.cli import main as bench_main
    except ImportError as exc:
        print(f"jagattn bench is not available: {exc}", file=sys.stderr)
        return 2
    return bench_main(argv)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "bench":
        return _cmd_bench(argv[1:])
    parser = argparse.ArgumentParser(prog="jagattn", description="attention kernels over jagged sequences")
    sub = parser.add_subparsers(dest="cmd", required=True)
    sub.add_parser("info", help="versions, device, every backend of every family with why not")
    pe = sub.add_parser("explain", help="which backend runs a call of these shapes, and why not the others")
    _add_explain_args(pe)
    pd = sub.add_parser(
        "demo", help="every op through auto on a small jagged batch, checked against the reference"
    )
    pd.add_argument("--device", default=None)
    pd.add_argument("--seed", type=int, default=0)
    sub.add_parser("bench", help="benchmarks (see `jagattn bench --help`)")
    args = parser.parse_args(argv)
    if args.cmd == "info":
        return _cmd_info(args)
    if args.cmd == "explain":
        return _cmd_explain(args)
    if args.cmd == "demo":
        return _cmd_demo(args)
    return 2


if __name__ == "__main__":
    sys.exit(main())
