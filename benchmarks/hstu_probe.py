"""One device round for HSTU (issue #5): is the first-listed config of each kernel the best per suite row?

The suite bench runs with ``JAGATTN_AUTOTUNE=0``: every HSTU kernel launches the first config of its list
(``triton/fwd.py`` ``_FWD_SMALL_D`` / ``_DQ_SMALL_D`` and their window orders, ``triton/bwd.py``
``_BWD_SMALL_D``). This probe forces, one at a time, every config of the forward list, of the dQ list and
of the dK/dV list (plus a few ``EXTRA`` tiles that are in no list) as the only config of that kernel, and
the launch switches the code already has: the compact work list (``schedule.ENABLED``, the grid order for
uneven batches) and the atomic dQ (``ops.ATOMIC_DQ_DEFAULT``). How: the autotuners' ``configs`` lists are
replaced inside a ``with`` block (:class:`Forced`); an autotuner with one config runs it without timing,
and no source file changes. A forward candidate changes only the forward kernel; a dQ or dK/dV candidate
only that backward kernel. The grid is already heads-fastest (``pid % H`` in every kernel), so there
is no head-order switch to try.

On the five hstu suite rows (built by ``jagattn.bench.cases.HstuFamily`` as ``jagattn bench`` builds
them, bf16), through the public ``jagattn.hstu_attention(..., backend="triton")``:

1. before any timing, every candidate passes the SPEC section 5 rule (``jagattn.testing.check_close``:
   output and the three gradients) against the fp32 reference (tf32 off) on three small batches of 16
   sequences (targets; skewed lengths, where the compact list applies; targets + context C=6 + window
   W=32). Their shapes share Triton's integer specialisations with the suite rows (batch, ``max_seq_len``
   and window multiples of 16), so the kernels they compile are the ones the rows run;
2. per row: the default's forward (inputs requiring grad, as the bench), backward alone
   (``torch.autograd.grad`` on one saved forward, ``retain_graph``) and forward+backward (the bench's
   ``bwd = fwdbwd - fwd``); then every candidate's forward and/or backward, each candidate's output or
   gradients against the default's (max abs diff, bit-identical or not), and the default again (drift);
3. optionally generative-recommenders' Triton HSTU (``peers/gr`` carried, added to ``sys.path``) in the
   same process after our rows, with the bench adapter's config exclusion, under ``--peer-deadline``;
   GR rows run B256, B128, ctx6, B64, recsys so that GR's shared autotune key (B=128, N=2048) is tuned on
   B128-N2048 as in the bench. GR is timed only here (its correctness gate is the bench's).

Before that, the candidates' kernels (and GR's autotune configs, split over processes) compile in
parallel child processes that launch each kernel once on the small batches (Triton's disk cache is
shared), while the main process builds the rows. ``--deadline`` bounds the whole run: candidates and GR
rows past it are skipped and reported as such; the log and JSON are rewritten after every row.

Usage on the GPU machine (one call, ~250 s; carry ``peers/gr`` for the GR ratios)::

    JAGATTN_GIT_SHA=<sha> PYTHONPATH=src timeout 270 python3 benchmarks/hstu_probe.py --out $OUT --deadline 230

Writes ``$OUT/hstu_probe.log`` (per row: default and candidate ms, x = default/candidate, diffs; then a
SUMMARY: per row the best forward, backward, dQ and dK/dV candidate and GR's ratios) and
``$OUT/hstu_probe.json`` (everything, with provenance).

``--smoke``: the same code under ``TRITON_INTERPRET=1`` on the CPU, tiny rows (D=32, T <= 256, fp16),
two candidates, wall-clock times (meaningless), for testing the script here.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import multiprocessing as mp
import os
import sys
import time

SMOKE = "--smoke" in sys.argv
if SMOKE:
    os.environ["TRITON_INTERPRET"] = "1"  # before triton is imported
os.environ.setdefault("JAGATTN_AUTOTUNE", "0")  # first-listed configs, as the suite bench runs

import torch  # noqa: E402
import triton  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GR_PATH = os.path.join(ROOT, "peers", "gr")
if os.path.isdir(GR_PATH) and GR_PATH not in sys.path:
    sys.path.append(GR_PATH)

# Tiles in no config list (BLOCK_M, BLOCK_N, warps, stages), around the current first configs; the
# attention forward gained most from a 64x64 tile on 4 warps (two programs per SM) on short keys.
EXTRA = {
    "fwd": [
        (128, 64, 4, 3),
        (64, 32, 4, 4),
        (64, 64, 4, 4),
        (128, 64, 4, 2),
        (128, 32, 4, 2),
        (256, 32, 8, 3),
        (128, 32, 8, 3),  # session 18: two warpgroups of 64 rows sharing each K/V tile
        (128, 32, 8, 4),
    ],
    "dq": [(64, 64, 4, 2), (64, 32, 4, 4), (128, 32, 4, 4), (256, 32, 8, 3), (128, 32, 8, 3)],
    "dkdv": [(64, 64, 4, 3), (32, 64, 4, 2), (32, 32, 4, 3)],
}
# Interpreter configs for --smoke: the interpreter's defaults are fwd/dQ 32x16 and dK/dV 16x32.
SMOKE_CANDIDATES = ["fwd:16x32w4s1", "dkdv:32x16w4s1"]
GR_ORDER = ["B256-N1024", "B128-N2048", "ctx6-w256", "B64-N4096", "recsys"]
ROW_ORDER = ["B256-N1024", "ctx6-w256", "B128-N2048", "B64-N4096", "recsys"]  # the missed targets first

DEVICE = "cpu" if SMOKE else "cuda"
DTYPE = torch.float16 if SMOKE else torch.bfloat16  # the interpreter's bf16 dot is not exact


@dataclasses.dataclass(frozen=True)
class Cand:
    """One candidate: ``kind`` is default, fwd, dq, dkdv (with ``cfg``), compact, atomic_dq or scaled (the
    score factors applied per score, ``JAGATTN_HSTU_SCALE_LAST=0``, in every kernel)."""

    name: str
    kind: str
    cfg: tuple[int, int, int, int] | None = None
    listed: bool = True  # False: an EXTRA tile, in no config list

    @property
    def fwd(self) -> bool:
        return self.kind in ("fwd", "compact", "scaled")

    @property
    def bwd(self) -> bool:
        return self.kind in ("dq", "dkdv", "compact", "atomic_dq", "scaled")


def _cfg_name(kind: str, c: tuple[int, int, int, int]) -> str:
    return f"{kind}:{c[0]}x{c[1]}w{c[2]}s{c[3]}"


def _cfg_tuple(c: triton.Config) -> tuple[int, int, int, int]:
    return (int(c.kwargs["BLOCK_M"]), int(c.kwargs["BLOCK_N"]), int(c.num_warps), int(c.num_stages))


def all_candidates(extra: bool) -> list[Cand]:
    """Every candidate of this probe, the default first."""
    from jagattn.hstu.triton import bwd as tb
    from jagattn.hstu.triton import fwd as tf

    out = [Cand("default", "default")]
    if SMOKE:
        lists = {
            "fwd": [(32, 16, 4, 1), (16, 32, 4, 1)],
            "dq": [(32, 16, 4, 1)],
            "dkdv": [(16, 32, 4, 1), (32, 16, 4, 1)],
        }
    else:
        lists = {
            "fwd": [_cfg_tuple(c) for c in tf._FWD_SMALL_D],
            "dq": [_cfg_tuple(c) for c in tf._DQ_SMALL_D],
            "dkdv": [_cfg_tuple(c) for c in tb._BWD_SMALL_D],
        }
    for kind, cfgs in lists.items():
        out += [Cand(_cfg_name(kind, c), kind, c) for c in cfgs]
        if extra and not SMOKE:
            out += [Cand(_cfg_name(kind, c), kind, c, listed=False) for c in EXTRA[kind] if c not in cfgs]
    out += [
        Cand("compact", "compact"),
        Cand("atomic_dq", "atomic_dq"),
        Cand("scaled", "scaled"),
    ]
    return out


def _tuners() -> dict[str, list]:
    """The autotuners each candidate kind replaces (D <= 128; with and without a window)."""
    from jagattn.hstu.triton import bwd as tb
    from jagattn.hstu.triton import fwd as tf

    return {
        "fwd": [tf._fwd_small, tf._fwd_small_window, tf._fwd_small_long, tf._fwd_small_short],
        "dq": [tf._dq_small, tf._dq_small_window],
        "dkdv": [tb._bwd_small, tb._bwd_small_window],
    }


# launch switches read from the environment at each launch: variable -> candidate kind that sets it to 0
# (scaled: the score factors applied per score, not at the end; session 12 also had "phases", the per-phase
# loops, removed with them after rounds 1-3)
ENV_SWITCHES = {"JAGATTN_HSTU_SCALE_LAST": "scaled"}


class Forced:
    """Inside ``with``: the candidate's config is the only one of its kernel's autotuners, or its switch
    is on. Everything is restored on exit (the default is the unchanged state)."""

    def __init__(self, cand: Cand):
        self.cand = cand

    def __enter__(self) -> Forced:
        from jagattn.hstu import ops
        from jagattn.hstu.triton import schedule

        self._ops, self._sched = ops, schedule
        self._saved = {k: [list(t.configs) for t in ts] for k, ts in _tuners().items()}
        self._flags = (schedule.ENABLED, ops.ATOMIC_DQ_DEFAULT)
        self._env = {v: os.environ.get(v) for v in ENV_SWITCHES}
        c = self.cand
        if c.cfg is not None:
            bm, bn, w, s = c.cfg
            for t in _tuners()[c.kind]:
                t.configs = [triton.Config({"BLOCK_M": bm, "BLOCK_N": bn}, num_warps=w, num_stages=s)]
        elif c.kind == "compact":
            schedule.ENABLED = True
        elif c.kind == "atomic_dq":
            ops.ATOMIC_DQ_DEFAULT = True
        elif c.kind in ENV_SWITCHES.values():
            var = next(v for v, k in ENV_SWITCHES.items() if k == c.kind)
            os.environ[var] = "0"  # read at each launch
        return self

    def __exit__(self, *exc) -> bool:
        for k, ts in _tuners().items():
            for t, cfgs in zip(ts, self._saved[k], strict=True):
                t.configs = cfgs
        self._sched.ENABLED, self._ops.ATOMIC_DQ_DEFAULT = self._flags
        for var, val in self._env.items():
            if val is None:
                os.environ.pop(var, None)
            else:
                os.environ[var] = val
        return False


def default_configs(p) -> dict[str, tuple[int, int, int, int] | None]:
    """The config each kernel runs by default on problem ``p`` (None when it autotunes over several)."""
    from jagattn.hstu.triton import fwd as tf

    window = p.params["window"] > 0
    long = not window and tf.long_rows(p.params["max_seq_len"], p.dtype)
    short = not window and not long and tf.short_rows(p.params["max_seq_len"])
    out = {}
    for kind, tuners in _tuners().items():
        if kind == "fwd" and (long or short):
            t = tuners[2] if long else tuners[3]
        else:
            t = tuners[1] if window else tuners[0]
        out[kind] = _cfg_tuple(t.configs[0]) if len(t.configs) == 1 else None
    return out


def same_as_default(c: Cand, p) -> bool:
    """Whether candidate ``c`` launches exactly what the default launches on problem ``p``."""
    if c.kind == "default":
        return True
    if c.cfg is not None:
        return default_configs(p)[c.kind] == c.cfg
    if c.kind == "compact":
        b, n = len(p.lengths), p.params["max_seq_len"]
        return not (b > 1 and 2 * p.tokens < b * n)
    return False


# ---------------------------------------------------------------------------------------------
# rows and small batches


def suite_rows():
    from jagattn.bench import suites

    rows = {r.name: r for r in suites.select_rows(["hstu"], "default")}
    if not SMOKE:
        return [rows[n] for n in ROW_ORDER]
    # tiny versions of the five rows (D=32, H=2, N=64, at most 256 tokens)
    out = []
    for r in (rows[n] for n in ROW_ORDER):
        kind, lp = r.lengths
        if kind == "count_lognormal":
            lengths = (kind, {**lp, "n": 6, "median": 8, "hi": 64})
        else:
            lengths = (kind, {"n": 3, "lo": 58, "hi": 63})
        pr = {**r.params, "h": 2, "dq": 32, "dv": 32, "alpha": 1.0 / 32, "max_seq_len": 64}
        if pr["window"]:
            pr["window"] = 16
        out.append(dataclasses.replace(r, lengths=lengths, params=pr))
    return out


def check_rows():
    """Small batches for the correctness checks and the compile warm-up (multiples of 16 where the
    suite rows have them: batch, max_seq_len, window)."""
    from jagattn.bench.suites import Row

    b, n, h, d = (3, 64, 2, 32) if SMOKE else (16, 128, 4, 128)
    b0 = 8 if SMOKE else 16  # window 16 / 32: multiples of 16 like the suite's 256
    base = {"h": h, "dq": d, "dv": d, "alpha": 1.0 / d, "targets": (1, 20), "contextual": 0, "window": 0}
    uniform = ("count_uniform", {"n": b, "lo": (9 * n + 9) // 10, "hi": n - 1})
    skewed = ("count_lognormal", {"n": b, "median": n // 8, "sigma": 1.0, "lo": 1, "hi": n})
    return [
        Row("hstu", "check-targets", uniform, {**base, "max_seq_len": n}),
        Row("hstu", "check-skewed", skewed, {**base, "max_seq_len": n}),
        Row("hstu", "check-ctx6-w32", uniform, {**base, "max_seq_len": n, "contextual": 6, "window": 2 * b0}),
    ]  # fmt: skip


def _do(p, seed: int) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    shape = (p.tokens, p.params["h"], p.params["dv"])
    return torch.randn(shape, generator=gen, dtype=torch.float32).to(device=p.device, dtype=p.dtype)


def _launch_kernels(c: Cand, p, do: torch.Tensor) -> None:
    """Launch the kernels candidate ``c`` changes, with the arguments the public path passes (compile
    warm-up in the child processes; same launchers and autotuners as ``hstu_attention``)."""
    from jagattn.hstu.triton import bwd as tb
    from jagattn.hstu.triton import fwd as tf

    t = p.tensors
    q, k, v = t["q"], t["k"], t["v"]
    pr = p.params
    n = pr["max_seq_len"]
    args = (p.cu_seqlens, p.seq_tensor("num_targets", torch.int64), n, float(pr["alpha"]), 1.0 / n)
    args += (pr["contextual"], pr["window"], 0)
    kinds = {
        "default": "fwd dq dkdv",
        "compact": "fwd dq dkdv",
        "scaled": "fwd dq dkdv",
        "atomic_dq": "atomic",
    }
    kinds = kinds.get(c.kind, c.kind)
    if "fwd" in kinds:
        tf._launch(0, q, k, v, None, torch.empty_like(v), *args, None)
    if "dq" in kinds:
        tf._launch(1, q, k, v, do, torch.empty_like(q), *args, None)
    if "dkdv" in kinds or "atomic" in kinds:
        acc = torch.zeros(q.shape, dtype=torch.float32, device=q.device) if "atomic" in kinds else None
        tb._launch_bwd(do, q, k, v, acc, torch.empty_like(k), torch.empty_like(v), *args)


def _warm_child(names: list[str], extra: bool) -> None:
    """Child process: compile the kernels of ``names`` on every small batch (fills Triton's cache)."""
    from jagattn.bench.cases import HstuFamily

    by_name = {c.name: c for c in all_candidates(extra)}
    fam = HstuFamily()
    for row in check_rows():
        p = fam.build(row, DEVICE, DTYPE)
        do = _do(p, row.seed + 7)
        for name in names:
            with Forced(by_name[name]):
                _launch_kernels(by_name[name], p, do)
    if DEVICE == "cuda":
        torch.cuda.synchronize()


def _gr_module():
    from generative_recommenders import common
    from generative_recommenders.ops.triton import triton_hstu_attention as mod

    common.set_use_runtime_max_seq_len(True)
    return mod


def _gr_child(part: int, parts: int) -> None:
    """Child process: GR's forward and backward autotune lists cut to every ``parts``-th config from
    ``part``, run once (forward + backward) on the small targets batch, which has the suite rows'
    integer specialisations; the main process's autotuning then loads them from Triton's cache."""
    from jagattn.bench.cases import HstuFamily
    from jagattn.bench.peers import GrTriton

    fam = HstuFamily()
    row = check_rows()[0]
    p = fam.build(row, DEVICE, DTYPE)
    prep = GrTriton().prepare(p)  # applies the bench's exclusion rules to GR's lists first
    mod = _gr_module()
    for tuner in (mod._hstu_attn_fwd, mod._hstu_attn_bwd):
        cut = list(tuner.configs)[part::parts]
        if not cut:
            return
        tuner.configs = cut
    leaves = p.leaves()
    prep.fn(leaves).backward(_do(p, row.seed + 7))
    torch.cuda.synchronize()


def precompile(names: list[str], jobs: int, gr: bool, timeout: float, extra: bool, log) -> dict:
    """Start the compile children (ours and GR's); returns a handle for :func:`join_precompile`."""
    ctx = mp.get_context("spawn")
    j_gr = jobs // 2 if gr else 0
    j_ours = max(1, jobs - j_gr)
    # balanced by kernels to compile: the default and the compact list launch all three kernels
    groups: list[list[str]] = [[] for _ in range(min(j_ours, len(names)))]
    three = ("default", "compact", "scaled")
    for n in sorted(names, key=lambda n: n not in three):
        min(groups, key=lambda g: sum(3 if x in three else 1 for x in g)).append(n)
    procs = [("ours", ctx.Process(target=_warm_child, args=(g, extra))) for g in groups if g]
    procs += [("gr", ctx.Process(target=_gr_child, args=(i, j_gr))) for i in range(j_gr)]
    for _, pr in procs:
        pr.start()
    log(f"precompile: {len(names)} candidates in {len(groups)} processes, GR in {j_gr} processes")
    return {"procs": procs, "t0": time.time(), "timeout": timeout}


def join_precompile(handle: dict, log) -> dict:
    out = {}
    for who, pr in handle["procs"]:
        pr.join(max(1.0, handle["timeout"] - (time.time() - handle["t0"])))
        if pr.is_alive():
            pr.kill()  # a child of this script past the precompile limit
            pr.join()
        out.setdefault(who, []).append(pr.exitcode)
    secs = time.time() - handle["t0"]
    log(f"precompile done after {secs:.1f} s; exit codes {out} (nonzero/-9: that child died or was cut)")
    return {"seconds": secs, "exit_codes": out}


# ---------------------------------------------------------------------------------------------
# checks and timing


def bench_ms(fn, grads=None) -> float:
    if DEVICE != "cuda":  # smoke: one wall-clock call
        t0 = time.perf_counter()
        fn()
        return (time.perf_counter() - t0) * 1e3
    return float(triton.testing.do_bench(fn, warmup=25, rep=100, grad_to_none=grads, return_mode="median"))


def _reference(p, do: torch.Tensor, dtype: torch.dtype) -> dict[str, torch.Tensor]:
    """``o, dq, dk, dv`` of the reference computed in ``dtype`` (fp32/fp64 gold: upcast inputs; the
    input dtype: the yardstick of SPEC section 5)."""
    from jagattn.hstu.reference import hstu_reference

    pr = p.params
    leaves = [p.tensors[n].detach().to(dtype).requires_grad_(True) for n in ("q", "k", "v")]
    prev = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False  # the gold must be true fp32
    try:
        o = hstu_reference(
            *leaves, p.cu_seqlens, alpha=pr["alpha"], scale_len=pr["max_seq_len"],
            num_targets=p.seq_tensor("num_targets", torch.int64), contextual_seq_len=pr["contextual"],
            max_attn_len=pr["window"], compute_dtype=dtype,
        )  # fmt: skip
        grads = torch.autograd.grad(o, leaves, do.to(dtype))
    finally:
        torch.backends.cuda.matmul.allow_tf32 = prev
    return dict(zip(("o", "dq", "dk", "dv"), (o.detach(), *grads), strict=True))


def _ours(p, do: torch.Tensor) -> dict[str, torch.Tensor]:
    from jagattn.bench.cases import HstuFamily

    leaves = p.leaves()
    o = HstuFamily().call(p, leaves, "triton")
    grads = torch.autograd.grad(o, [leaves[n] for n in ("q", "k", "v")], do)
    return dict(zip(("o", "dq", "dk", "dv"), (o.detach(), *grads), strict=True))


def small_checks(cands: list[Cand], deadline: float, t_start: float, log) -> dict:
    """Every candidate against the gold reference on the small batches (SPEC section 5 rule); past
    ``deadline`` the rest are recorded as not checked (and left out of the ranking)."""
    from jagattn import testing as T
    from jagattn.bench.cases import HstuFamily

    fam = HstuFamily()
    gold_dtype = torch.float64 if DEVICE == "cpu" else torch.float32
    out = {}
    for row in check_rows():
        p = fam.build(row, DEVICE, DTYPE)
        do = _do(p, row.seed + 7)
        gold = _reference(p, do, gold_dtype)
        lowp = _reference(p, do, DTYPE)
        for c in cands:
            t0 = time.time()
            key = f"{row.name}/{c.name}"
            if t0 - t_start > deadline:
                out[key] = {"ok": False, "error": "not checked (deadline)", "seconds": 0.0}
                continue
            try:
                with Forced(c), T.poisoned_outputs():
                    got = _ours(p, do)
                errs = {n: T.check_close(f"{key} {n}", got[n], gold[n], lowp[n]) for n in got}
                out[key] = {"ok": True, **{n: {"max_abs": e.max_abs, "rms": e.rms} for n, e in errs.items()}}
            except Exception as exc:  # noqa: BLE001 (a failing candidate is a result, not a crash)
                out[key] = {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:600]}
                log(f"FAIL {key}: {out[key]['error']}")
            out[key]["seconds"] = round(time.time() - t0, 2)
    n_ok = sum(r["ok"] for r in out.values())
    slow = sorted(out.items(), key=lambda kv: -kv[1]["seconds"])[:3]
    gold_name = str(gold_dtype).split(".")[-1]
    log(f"small-batch SPEC checks vs {gold_name} reference: {n_ok}/{len(out)} passed; slowest "
        f"{[(k, v['seconds']) for k, v in slow]} (a slow one compiled here: its warm-up missed)")  # fmt: skip
    return out


def _diff(a: dict, b: dict, names) -> dict:
    return {
        n: {
            "max_abs": float((a[n].float() - b[n].float()).abs().max()) if a[n].numel() else 0.0,
            "bitwise": bool(torch.equal(a[n], b[n])),
            "nan": bool(torch.isnan(a[n]).any()),
        }
        for n in names
    }


def time_row(p, do: torch.Tensor, cands: list[Cand], rows_deadline: float, t_start: float, log) -> dict:
    """Default and candidates on one suite row (see the module docstring, step 2)."""
    from jagattn.bench.cases import HstuFamily

    fam = HstuFamily()
    fl = fam.flops(p)
    leaves = p.leaves()
    grads = [leaves[n] for n in ("q", "k", "v")]

    def fwd():
        return fam.call(p, leaves, "triton")

    def outputs():
        o = fwd()
        g = torch.autograd.grad(o, grads, do)
        return dict(zip(("o", "dq", "dk", "dv"), (o.detach(), *g), strict=True))

    def time_fwd_bwd(rec: dict, with_fwd: bool, with_bwd: bool) -> None:
        if with_fwd:
            rec["fwd"] = bench_ms(fwd)
        if with_bwd:
            o = fwd()
            rec["bwd"] = bench_ms(lambda o=o: torch.autograd.grad(o, grads, do, retain_graph=True))
            del o

    defaults = default_configs(p)
    rec = {
        "describe": fam.describe(p),
        "flops": {k: fl[k] for k in ("fwd", "bwd")},
        "peer_convention_flops": {k: fl["peer_convention"][k] for k in ("fwd", "bwd")},
        "default_configs": {k: list(v) if v else None for k, v in defaults.items()},
        "ms": {},
        "diff_vs_default": {},
        "skipped": [],
        "same_as_default": [],
    }  # fmt: skip
    with Forced(Cand("default", "default")):
        ref = outputs()
        d = rec["ms"]["default"] = {}
        time_fwd_bwd(d, True, True)
        d["fwdbwd"] = bench_ms(lambda: fwd().backward(do), grads)
        d["bwd_bench_convention"] = d["fwdbwd"] - d["fwd"]
    for c in cands:
        if c.kind == "default":
            continue
        if same_as_default(c, p):
            rec["same_as_default"].append(c.name)
            continue
        if time.time() - t_start > rows_deadline:
            rec["skipped"].append(c.name)
            continue
        try:
            with Forced(c):
                got = outputs()
                m = rec["ms"][c.name] = {}
                time_fwd_bwd(m, c.fwd, c.bwd)
            names = (["o"] if c.fwd else []) + (["dq", "dk", "dv"] if c.bwd else [])
            rec["diff_vs_default"][c.name] = _diff(got, ref, names)
            del got
        except Exception as exc:  # noqa: BLE001
            rec["ms"][c.name] = {"error": f"{type(exc).__name__}: {exc}"[:400]}
            log(f"    {c.name}: failed {rec['ms'][c.name]['error']}")
    with Forced(Cand("default", "default")):
        d2 = rec["ms"]["default_again"] = {}
        time_fwd_bwd(d2, True, True)
    del ref
    return rec


def time_gr(p, do: torch.Tensor) -> dict:
    """GR's forward, backward alone and forward+backward on one row (autotunes on first use)."""
    from jagattn.bench.peers import GrTriton

    prep = GrTriton().prepare(p)
    leaves = p.leaves()
    grads = [leaves[n] for n in ("q", "k", "v")]
    t0 = time.time()
    prep.fn(leaves).backward(do)  # autotune / compile
    if DEVICE == "cuda":
        torch.cuda.synchronize()
    out = {"warmup_s": round(time.time() - t0, 1), "label": prep.label, "note": prep.note}
    out["fwd"] = bench_ms(lambda: prep.fn(leaves))
    o = prep.fn(leaves)
    try:
        out["bwd"] = bench_ms(lambda o=o: torch.autograd.grad(o, grads, do, retain_graph=True))
    except Exception as exc:  # noqa: BLE001 (retain_graph unsupported: the bench convention still stands)
        out["bwd_error"] = f"{type(exc).__name__}: {exc}"[:300]
    del o
    out["fwdbwd"] = bench_ms(lambda: prep.fn(leaves).backward(do), grads)
    out["bwd_bench_convention"] = out["fwdbwd"] - out["fwd"]
    mod = _gr_module()
    tuners = (("fwd", mod._hstu_attn_fwd), ("bwd", mod._hstu_attn_bwd))
    out["configs"] = {k: str(getattr(t, "best_config", None)) for k, t in tuners}
    return out


# ---------------------------------------------------------------------------------------------
# report


def _fmt(ms: float, flops: float) -> str:
    return f"{ms:.3f}ms({flops / ms / 1e9:.0f}TF)"


def row_lines(name: str, rec: dict) -> list[str]:
    ms, fl = rec["ms"], rec["flops"]
    d, again = ms["default"], ms["default_again"]
    lines = [
        f"{name}: {rec['describe']}; default configs {rec['default_configs']}",
        f"    default fwd {_fmt(d['fwd'], fl['fwd'])} bwd {_fmt(d['bwd'], fl['bwd'])} "
        f"(bench convention fwdbwd-fwd {d['bwd_bench_convention']:.3f}); "
        f"again: fwd {again.get('fwd', 0):.3f} bwd {again.get('bwd', 0):.3f}",
    ]  # fmt: skip
    for key in ("fwd", "bwd"):
        items = [(n, m[key]) for n, m in ms.items() if key in m and n not in ("default", "default_again")]
        if items:
            body = "  ".join(f"{n}={t:.3f}({d[key] / t:.3f}x)" for n, t in sorted(items, key=lambda x: x[1]))
            lines.append(f"    {key} candidates (x = default/candidate): {body}")
    diffs = rec["diff_vs_default"]
    bad = {
        n: {k: v["max_abs"] for k, v in dd.items()}
        for n, dd in diffs.items()
        if not all(v["bitwise"] for v in dd.values())
    }
    if bad:
        lines.append(f"    not bit-identical to default (max abs diff): {bad}")
    nan = [n for n, dd in rec["diff_vs_default"].items() if any(v["nan"] for v in dd.values())]
    if nan:
        lines.append(f"    NaN in outputs of: {nan}")
    if rec["skipped"]:
        lines.append(f"    skipped (deadline): {rec['skipped']}")
    return lines


def summary(result: dict, ok: dict) -> list[str]:
    """Per row: the best forward, dQ, dK/dV and switch candidate against the default, and GR's ratios."""
    lines = ["SUMMARY (x = default ms / candidate ms; only candidates that passed every small check)"]
    sw = ("compact", "scaled")
    groups = [("fwd", ("fwd", *sw), "fwd"), ("bwd", ("dq", "dkdv", "atomic_dq", *sw), "bwd"),
              ("dq", ("dq",), "bwd"), ("dkdv", ("dkdv",), "bwd"),
              ("scaled fwd", ("scaled",), "fwd"), ("scaled bwd", ("scaled",), "bwd")]  # fmt: skip
    for name, rec in result["rows"].items():
        ms = rec["ms"]
        d = ms["default"]
        parts = [f"{name}: default fwd {d['fwd']:.3f} bwd {d['bwd']:.3f}"]
        best = {}
        for label, kinds, key in groups:
            items = [
                (n, m[key])
                for n, m in ms.items()
                if key in m and n.split(":")[0] in kinds and ok.get(n, False)
            ]
            if items:
                n, t = min(items, key=lambda x: x[1])
                best[label] = (n, t)
                keep = "" if t < d[key] else ", the default stays"
                parts.append(f"best {label} {n} {t:.3f} ({d[key] / t:.3f}x{keep})")
        saved = sum(max(0.0, d["bwd"] - best[k][1]) for k in ("dq", "dkdv") if k in best)
        best_bwd = d["bwd"] - saved
        parts.append(f"bwd with best dq + best dkdv ~{best_bwd:.3f} (estimate: the two kernels' savings add)")
        best_fwd = min(best.get("fwd", ("", d["fwd"]))[1], d["fwd"])
        gr = rec.get("gr") or {}
        if "fwd" in gr:
            parts.append(
                f"GR fwd {gr['fwd']:.3f}: x {gr['fwd'] / d['fwd']:.3f} default, "
                f"{gr['fwd'] / best_fwd:.3f} best"
            )
        if "bwd" in gr:
            parts.append(
                f"GR bwd {gr['bwd']:.3f}: x {gr['bwd'] / d['bwd']:.3f} default, "
                f"{gr['bwd'] / max(1e-9, best_bwd):.3f} best dq+dkdv (estimate)"
            )
        if "bwd_bench_convention" in gr:
            g, o = gr["bwd_bench_convention"], d["bwd_bench_convention"]
            parts.append(f"bench convention fwdbwd-fwd: GR {g:.3f} / ours {o:.3f} = x {g / o:.3f}")
        lines.append("  " + "; ".join(parts))
    return lines


# ---------------------------------------------------------------------------------------------


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    ap.add_argument("--deadline", type=float, default=230.0, help="seconds: start nothing after this")
    ap.add_argument("--candidates", default="", help="comma list of names or kind prefixes (fwd:, dq:, ...)")
    ap.add_argument("--rows", default="", help="comma list of row names (default: all five)")
    ap.add_argument("--no-extra", action="store_true", help="only configs of the lists (no EXTRA tiles)")
    ap.add_argument("--jobs", type=int, default=-1, help="compile processes (default 14 on a GPU, 0 smoke)")
    ap.add_argument("--precompile-timeout", type=float, default=100.0)
    ap.add_argument("--no-gr", action="store_true")
    ap.add_argument("--gr-reserve", type=float, default=55.0, help="seconds kept for GR after our rows")
    ap.add_argument("--peer-deadline", type=float, default=-1.0, help="start no GR row after (deadline - 12)")
    ap.add_argument("--smoke", action="store_true", help="CPU interpreter dry run (tiny shapes)")
    args = ap.parse_args()
    t_start = time.time()
    os.makedirs(args.out, exist_ok=True)
    log_f = open(os.path.join(args.out, "hstu_probe.log"), "a")  # noqa: SIM115 (open for the whole run)

    def log(msg: str) -> None:
        line = f"[{time.time() - t_start:6.1f}s] {msg}"
        print(line, flush=True)
        log_f.write(line + "\n")
        log_f.flush()

    from jagattn.bench import report
    from jagattn.bench.cases import HstuFamily
    from jagattn.bench.peers import GrTriton

    cands = all_candidates(not args.no_extra)
    if SMOKE and not args.candidates:
        args.candidates = ",".join(SMOKE_CANDIDATES)
    if args.candidates:
        want = [w for w in args.candidates.split(",") if w]
        cands = [
            c for c in cands if c.kind == "default" or any(c.name == w or c.name.startswith(w) for w in want)
        ]
    names = [c.name for c in cands]
    gr_why = "--no-gr" if args.no_gr else "--smoke (no CUDA)" if SMOKE else GrTriton().unavailable_reason()
    gr_version = GrTriton().version() if gr_why is None else f"n/a ({gr_why})"
    prov = report.provenance(sys.argv[1:], torch.device(DEVICE), {"gr_triton": gr_version})
    prov["command"] = "python3 " + " ".join(sys.argv)
    # the device's copy of the tree has no .git: the caller passes the sha
    prov["git_sha"] = os.environ.get("JAGATTN_GIT_SHA", prov["git_sha"])
    prov["env"]["JAGATTN_AUTOTUNE"] = os.environ.get("JAGATTN_AUTOTUNE")
    log(f"provenance {json.dumps(prov)}")
    log(f"{len(cands)} candidates: {names}")
    result = {"provenance": prov, "candidates": [dataclasses.asdict(c) for c in cands], "rows": {}}

    def dump() -> None:  # after every step: a run cut by its time limit still leaves its numbers
        result["elapsed_s"] = time.time() - t_start
        with open(os.path.join(args.out, "hstu_probe.json"), "w") as f:
            json.dump(result, f, indent=1)

    jobs = args.jobs if args.jobs >= 0 else (0 if SMOKE else 14)
    handle = (
        precompile(names, jobs, gr_why is None, args.precompile_timeout, not args.no_extra, log)
        if jobs
        else None
    )

    fam = HstuFamily()
    rows = suite_rows()
    if args.rows:
        rows = [r for r in rows if r.name in set(args.rows.split(","))]
    problems = {}
    for row in rows:  # built while the children compile
        p = fam.build(row, DEVICE, DTYPE)
        problems[row.name] = (p, _do(p, row.seed + 7))
    log(f"rows built: {[(n, p.tokens) for n, (p, _) in problems.items()]}")
    if handle:
        result["precompile"] = join_precompile(handle, log)
    dump()

    rows_deadline = args.deadline - (args.gr_reserve if gr_why is None else 0.0)
    # the checks must leave the rows some time: a check that compiles (its warm-up missed) is slow
    result["small_checks"] = small_checks(cands, rows_deadline - 40.0, t_start, log)
    ok = {
        c.name: all(v["ok"] for k, v in result["small_checks"].items() if k.endswith("/" + c.name))
        for c in cands
    }
    dump()

    for name, (p, do) in problems.items():
        try:
            rec = time_row(p, do, cands, rows_deadline, t_start, log)
        except Exception as exc:  # noqa: BLE001 (the default itself failed: record it, go on)
            result.setdefault("row_errors", {})[name] = f"{type(exc).__name__}: {exc}"[:600]
            log(f"{name}: FAILED {result['row_errors'][name]}")
            continue
        result["rows"][name] = rec
        for line in row_lines(name, rec):
            log(line)
        dump()

    peer_deadline = args.peer_deadline if args.peer_deadline >= 0 else args.deadline - 12.0
    if gr_why is not None:
        log(f"gr_triton: n/a ({gr_why})")
    else:
        for name in [n for n in GR_ORDER if n in result["rows"]]:
            if time.time() - t_start > peer_deadline:
                log(f"gr_triton {name}: peer deadline {peer_deadline:.0f} s reached, not timed")
                continue
            p, do = problems[name]
            try:
                gr = time_gr(p, do)
            except Exception as exc:  # noqa: BLE001
                gr = {"error": f"{type(exc).__name__}: {exc}"[:400]}
            result["rows"][name]["gr"] = gr
            d = result["rows"][name]["ms"]["default"]
            if "fwd" in gr:
                log(
                    f"gr_triton {name}: fwd {gr['fwd']:.3f} bwd {gr.get('bwd', float('nan')):.3f} "
                    f"fwdbwd {gr['fwdbwd']:.3f} (warm-up {gr['warmup_s']} s); x = GR/ours default: "
                    f"fwd {gr['fwd'] / d['fwd']:.3f} bwd {gr.get('bwd', float('nan')) / d['bwd']:.3f} "
                    f"bench-convention bwd {gr['bwd_bench_convention'] / d['bwd_bench_convention']:.3f}"
                )
            else:
                log(f"gr_triton {name}: {gr['error']}")
            dump()

    failed = [k for k, v in result["small_checks"].items() if not v["ok"] and "deadline" not in v["error"]]
    unchecked = sorted(
        {k.split("/")[1] for k, v in result["small_checks"].items() if "deadline" in v.get("error", "")}
    )
    result["summary"] = summary(result, ok)
    for line in result["summary"]:
        log(line)
    if failed:
        log(f"FAILED small checks: {failed}")
    if unchecked:
        log(f"not checked (deadline; left out of the ranking): {unchecked}")
    dump()
    log(f"done in {result['elapsed_s']:.1f} s")


if __name__ == "__main__":
    main()
