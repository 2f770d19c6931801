"""One device round for the attention forward (issue #4): launch variants against the current default.

For every attention row of the default suite (built exactly as ``jagattn bench`` builds it), each
candidate (overrides of ``fwd.fwd_schedule``: the first-listed tile and the grid order) runs through the public
``jagattn.attention(..., backend="triton")`` with ``JAGATTN_AUTOTUNE=0``, so dispatch is timed as the
bench times it. Per row: each candidate's output and lse against the default's (max abs diff and
whether bit-identical), ``do_bench`` medians (the default timed first and last, to see drift), and
optionally FlexAttention / torch varlen_attn forward in the same process for the ratio. Before the
timings every candidate passes the SPEC section 5 rule against an fp32 reference on small batches
(causal, non-causal, window, GQA). Candidates compile in parallel child processes first (Triton's
disk cache), so the round fits one short device call.

Round 1 (commit af4841f, ``2026-11-21-s5-h200-attention-fwd-round1.*``) compared explicit tiles and
launch flags; this version compares the schedule ``fwd.fwd_schedule`` picks with its overrides, on
the suite rows plus equal-length rows around the short-tile threshold.

Usage on the GPU machine:
``PYTHONPATH=src python3 benchmarks/attention_fwd_probe.py --out $OUT [--candidates a,b] [--peers flex]``
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import platform
import subprocess
import sys
import time

os.environ.setdefault("JAGATTN_AUTOTUNE", "0")  # first-listed configs, as the suite bench runs

import torch  # noqa: E402
import triton  # noqa: E402

# name -> (tile, head_fast) overrides of ``fwd.fwd_schedule`` ("short" = 64x64/4 warps/3 stages first,
# "long" = the 128x64/8 warps/3 stages tile first), or None for the launcher's own choice.
# Round 1 (commit af4841f) compared explicit tiles and a SPLIT flag (one loop per mask phase, 16-18%
# slower on every row, removed); this round confirms the chosen schedule.
CANDIDATES: dict[str, tuple[str, str] | None] = {
    "default": None,
    "old_long": ("long", "0"),  # the launch before session 5 (same kernel code)
    "long_head_fast": ("long", "1"),
    "short_slot_fast": ("short", "0"),
    "short_head_fast": ("short", "1"),
}
# extra rows around SHORT_KEYS_MAX (equal lengths: the longest a short-tile batch can be)
EXTRA_ROWS = [
    ("equal3584-hkv16", 32256, 9, 16),
    ("equal3584-hkv4", 32256, 9, 4),
    ("equal4096-hkv16", 32768, 8, 16),
]

SMALL_CASES = [
    # lengths, hq, hkv, d, causal, window
    ([300, 1, 0, 1000, 77, 129], 8, 2, 128, True, (-1, -1)),
    ([300, 1, 0, 1000, 77, 129], 8, 8, 128, False, (-1, -1)),
    ([300, 1, 0, 1000, 77, 129], 8, 4, 128, True, (100, -1)),
    ([513, 64, 2000], 4, 4, 128, False, (37, 5)),
]


class Candidate:
    """Sets the forward's schedule overrides for the calls inside ``with``."""

    def __init__(self, spec):
        self.spec = spec

    def __enter__(self):
        from jagattn.attention.triton import fwd

        self._fwd = fwd
        self._saved = (fwd.FWD_TILE_OVERRIDE, fwd.FWD_HEAD_FAST_OVERRIDE)
        if self.spec is not None:
            fwd.FWD_TILE_OVERRIDE, fwd.FWD_HEAD_FAST_OVERRIDE = self.spec
        return self

    def __exit__(self, *exc):
        self._fwd.FWD_TILE_OVERRIDE, self._fwd.FWD_HEAD_FAST_OVERRIDE = self._saved
        return False


def _tiny_calls(names: list[str]) -> None:
    """Compile (by running once) the given candidates for every mask class of the suite, D = Dv = 128."""
    import jagattn

    torch.cuda.set_device(0)
    lens = [300, 1000, 77]
    cu = torch.tensor([0, 300, 1300, 1377], dtype=torch.int32, device=DEVICE)
    q = torch.randn(1377, 4, 128, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(1377, 2, 128, device="cuda", dtype=torch.bfloat16)
    for name in names:
        with Candidate(CANDIDATES[name]):
            for causal, window in ((True, (-1, -1)), (False, (-1, -1)), (True, (1024, -1))):
                jagattn.attention(
                    q, k, k, cu, cu, max(lens), max(lens), causal=causal, window=window, backend="triton"
                )
    torch.cuda.synchronize()


def precompile(names: list[str], jobs: int, log) -> None:
    t0 = time.time()
    ctx = mp.get_context("spawn")
    groups = [names[i::jobs] for i in range(min(jobs, len(names)))]
    procs = [ctx.Process(target=_tiny_calls, args=(g,)) for g in groups if g]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    log(f"precompile: {len(names)} candidates in {len(procs)} processes, {time.time() - t0:.1f} s, "
        f"exit codes {[p.exitcode for p in procs]}")  # fmt: skip


DEVICE = "cuda"


def bench_ms(fn) -> float:
    if DEVICE != "cuda":  # a dry run of the script under the interpreter
        t0 = time.perf_counter()
        fn()
        return (time.perf_counter() - t0) * 1e3
    return float(triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median"))


def small_checks(names: list[str], log) -> dict:
    import jagattn
    from jagattn import testing as T
    from jagattn.attention.reference import attention_reference

    out = {}
    for ci, (lens, hq, hkv, d, causal, window) in enumerate(SMALL_CASES):
        dt = torch.bfloat16
        if DEVICE != "cuda":  # dry run: interpreter-sized, fp16 (the interpreter's bf16 dot is not exact)
            lens, d, dt = [n // 20 for n in lens], 32, torch.float16
        g = T.generator(100 + ci)
        t = sum(lens)
        q = T.randn((t, hq, d), generator=g, dtype=dt, device=DEVICE)
        k = T.randn((t, hkv, d), generator=g, dtype=dt, device=DEVICE)
        v = T.randn((t, hkv, d), generator=g, dtype=dt, device=DEVICE)
        cu = T.cu_seqlens(lens, device=DEVICE)
        kw = dict(causal=causal, window=window)
        gold = attention_reference(q.float(), k.float(), v.float(), cu, cu, **kw)[0]
        lowp = attention_reference(q, k, v, cu, cu, compute_dtype=dt, **kw)[0]
        for name in names:
            with Candidate(CANDIDATES[name]):
                o = jagattn.attention(q, k, v, cu, cu, max(lens), max(lens), backend="triton", **kw)
            key = f"case{ci}/{name}"
            try:
                err = T.check_close(key, o, gold, lowp)
                out[key] = {"ok": True, "max_abs": err.max_abs, "rms": err.rms}
            except AssertionError as exc:
                out[key] = {"ok": False, "error": str(exc)}
                log(f"FAIL {exc}")
    n_ok = sum(r["ok"] for r in out.values())
    log(f"small-shape SPEC checks vs fp32 reference: {n_ok}/{len(out)} passed")
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    ap.add_argument("--candidates", default=",".join(CANDIDATES))
    ap.add_argument("--rows", default="")
    ap.add_argument("--peers", default="torch_varlen,flex")
    ap.add_argument("--peer-deadline", type=float, default=200.0, help="start no peer row after this many s")
    ap.add_argument("--jobs", type=int, default=12)
    ap.add_argument("--suite", default="default", help="default, or smoke for a dry run on a CPU")
    args = ap.parse_args()
    global DEVICE
    DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
    os.makedirs(args.out, exist_ok=True)
    t_start = time.time()
    log_f = open(os.path.join(args.out, "fwd_probe.log"), "a")  # noqa: SIM115 (open for the whole run)

    def log(msg: str) -> None:
        line = f"[{time.time() - t_start:6.1f}s] {msg}"
        print(line, flush=True)
        log_f.write(line + "\n")
        log_f.flush()

    import jagattn
    from jagattn.bench import cases, peers, suites
    from jagattn.bench.flops import attention_flops, attention_pairs

    names = [n for n in args.candidates.split(",") if n]
    if "default" not in names:
        names.insert(0, "default")
    prov = {
        "device": torch.cuda.get_device_name(0) if DEVICE == "cuda" else "cpu (interpreter)",
        "torch": torch.__version__,
        "triton": triton.__version__,
        "python": platform.python_version(),
        "git_sha": os.environ.get("JAGATTN_GIT_SHA", "unknown"),
        "autotune": os.environ.get("JAGATTN_AUTOTUNE"),
        "command": " ".join(sys.argv),
    }
    try:
        prov["nvidia_smi"] = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,driver_version,clocks.sm,clocks.max.sm", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=20,
        ).stdout.strip()  # fmt: skip
    except Exception as exc:  # noqa: BLE001
        prov["nvidia_smi"] = repr(exc)
    log(f"provenance {json.dumps(prov)}")
    result = {"provenance": prov, "candidates": {n: CANDIDATES[n] for n in names}, "rows": {}}

    def dump() -> None:  # after every row: a run cut by its time limit still leaves its numbers
        result["elapsed_s"] = time.time() - t_start
        with open(os.path.join(args.out, "fwd_probe.json"), "w") as f:
            json.dump(result, f, indent=1)

    if DEVICE == "cuda" and args.jobs > 0:
        precompile(names, args.jobs, log)
    result["small_checks"] = small_checks(names, log)

    fam = cases.AttentionFamily()
    rows = suites.select_rows(["attention"], args.suite)
    if args.suite == "default":
        for name, total, n, hkv in EXTRA_ROWS:
            rows.append(
                suites.Row(
                    "attention", name, ("equal", {"total": total, "n": n}),
                    {"hq": 16, "hkv": hkv, "d": 128, "dv": 128, "causal": True, "window": (-1, -1)},
                )
            )  # fmt: skip
    if args.rows:
        wanted = set(args.rows.split(","))
        rows = [r for r in rows if r.name in wanted]
    problems = {}
    for row in rows:
        p = fam.build(row, DEVICE, torch.bfloat16 if DEVICE == "cuda" else torch.float16)
        problems[row.name] = p
        pr = p.params
        pairs = attention_pairs(p.lengths, p.lengths, causal=pr["causal"], window=tuple(pr["window"]))
        flops = attention_flops(pairs, hq=pr["hq"], d=pr["d"], dv=pr["dv"])["fwd"]
        t = p.tensors
        rec = {"describe": fam.describe(p), "fwd_flops": flops, "ms": {}, "diff_vs_default": {}}

        def call(t=t, p=p, pr=pr):
            return jagattn.attention(
                t["q"], t["k"], t["v"], p.cu_seqlens, p.cu_seqlens, max(p.lengths), max(p.lengths),
                causal=pr["causal"], window=tuple(pr["window"]), backend="triton", return_lse=True,
            )  # fmt: skip

        with Candidate(None):
            o0, lse0 = call()
        for name in names + ["default"]:
            with Candidate(CANDIDATES[name]):
                o, lse = call()
                ms = bench_ms(call)
            key = name if name not in rec["ms"] else "default_again"
            rec["ms"][key] = ms
            if key == name:
                fin = torch.isfinite(lse0)
                rec["diff_vs_default"][name] = {
                    "o_max_abs": float((o.float() - o0.float()).abs().max()),
                    "o_bitwise": bool(torch.equal(o, o0)),
                    "lse_max_abs": float((lse[fin] - lse0[fin]).abs().max()) if fin.any() else 0.0,
                    "lse_bitwise": bool(torch.equal(lse, lse0)),
                    "nan": bool(torch.isnan(o).any()),
                }
        base = rec["ms"]["default"]
        summary = "  ".join(
            f"{n}={ms:.3f}({base / ms:.3f}x,{flops / ms / 1e9:.0f}TF)" for n, ms in rec["ms"].items()
        )
        log(f"{row.name}: {rec['describe']}\n    {summary}")
        bad = {n: d for n, d in rec["diff_vs_default"].items() if not d["o_bitwise"]}
        if bad:
            log(
                f"    not bit-identical to default: { {n: (d['o_max_abs'], d['lse_max_abs']) for n, d in bad.items()} }"
            )
        result["rows"][row.name] = rec
        del o0, lse0
        dump()

    # peers last, each row until the deadline (Flex compiles per row)
    peer_impls = {"flex": peers.Flex(), "torch_varlen": peers.TorchVarlen()}
    order = ["causal-mean8192-hkv16", "causal-mean8192-hkv4", "skewed", "window1024-mean8192",
             "causal-mean2048-hkv16", "noncausal-mean2048", "causal-mean2048-hkv4", "causal-mean512-hkv16",
             "causal-mean512-hkv4"]  # fmt: skip
    for peer in [x for x in args.peers.split(",") if x]:
        impl = peer_impls[peer]
        why = impl.unavailable_reason()
        if why:
            log(f"{peer}: n/a ({why})")
            continue
        for name in order:
            if name not in problems:
                continue
            if time.time() - t_start > args.peer_deadline:
                log(f"{peer}: deadline reached, {name} not timed")
                break
            p = problems[name]
            try:
                prep = impl.prepare(p)
                prep.fn(p.tensors)
                ms = bench_ms(lambda prep=prep, p=p: prep.fn(p.tensors))
            except Exception as exc:  # noqa: BLE001
                log(f"{peer} {name}: failed {type(exc).__name__}: {exc}")
                continue
            rec = result["rows"][name]
            rec.setdefault("peers_ms", {})[peer] = ms
            ours = {n: rec["ms"][n] for n in rec["ms"]}
            log(f"{peer} {name}: {ms:.3f} ms; x = peer/ours: "
                + " ".join(f"{n}={ms / t:.3f}" for n, t in ours.items()))  # fmt: skip
            dump()
    dump()
    log(f"done in {result['elapsed_s']:.1f} s")


if __name__ == "__main__":
    main()
