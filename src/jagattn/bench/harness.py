"""One suite row end to end: build, correctness gate, timing, peak memory.

Order per row (the gate runs before any timing):

1. Build the row's seeded batch (:mod:`~jagattn.bench.cases`) and prepare every implementation
   (setup such as block masks happens here, untimed). One that cannot run is ``n/a (reason)``.
2. Correctness gate. The gold is jagattn's ``reference`` backend run on an upcast copy (fp32 on a
   GPU, fp64 on a CPU). Big batches are checked on a subset of whole sequences within a token
   budget: each implementation runs on the **full** batch, and the rows (and gradient rows) of
   the chosen sequences are compared with the gold computed on those sequences alone (sequences
   are independent in all three families; HSTU keeps the batch's ``max_seq_len``). Only when no
   single sequence fits the budget is a **separate call** made on the first tokens of the
   shortest sequence (impl and gold on the same truncated batch). The reference itself is
   checked on the subset only. What was compared is recorded per row.
3. Timing with ``triton.testing.do_bench(..., return_mode="median")`` after a warm-up call that
   triggers autotuning / compilation. ``fwd`` times the forward with inputs that require grad
   (the training forward); ``fwdbwd`` times forward + ``o.backward(do)``; ``bwd`` is reported as
   fwdbwd minus fwd. On a CPU (smoke suite) a wall-clock median replaces do_bench.
4. Peak memory: ``torch.cuda.max_memory_allocated`` minus the allocation before one call
   (forward + backward when the backward is measured), after the timing.
"""

from __future__ import annotations

import dataclasses
import gc
import json
import math
import os
import random
import statistics
import time
import traceback
from typing import Any

import torch

from . import clocks
from .cases import FAMILIES, Problem
from .impls import Impl, Prepared, Unavailable
from .progress import Progress
from .suites import Row, describe_lengths

# Gate: per compared tensor, max|out - gold| <= tol_max * max|gold| and
# rms(out - gold) <= tol_rms * rms(gold), and no NaN/inf. Per input dtype.
# bf16: on the first H200 run every peer and kernel stayed under max_rel 9.3e-3 / rms_rel 4.4e-3
# (the reference run in bf16: 3.2e-3 / 1.7e-3), so these leave a 3x margin; fp16 has 8x finer steps.
TOLERANCES = {
    torch.bfloat16: (3e-2, 1e-2),
    torch.float16: (1e-2, 4e-3),
    torch.float32: (5e-3, 2e-3),
}


# Errors after which the CUDA context is unusable: every later CUDA call fails with the same error,
# so measuring anything else in this process would only report that error again.
_FATAL_MARKERS = (
    "illegal memory access",
    "illegal instruction",
    "misaligned address",
    "unspecified launch failure",
    "device-side assert",
    "cudaErrorIllegalAddress",
    "CUDA_ERROR_ILLEGAL_ADDRESS",
    "CUDA_ERROR_LAUNCH_FAILED",
)

# Fault injection for the tests of the crash handling (no GPU needed): ``<row key>:<impl>`` makes
# that implementation's check raise an error that reads like an illegal memory access;
# ``<row key>:<impl>:abort`` kills the process there instead (a crash no Python code sees).
FAULT_ENV = "JAGATTN_BENCH_FAULT"
# Set by ``--isolate`` for its child processes: each stage of each implementation is written
# here first, so the parent knows what was running when a child died without a word.
MARKER_ENV = "JAGATTN_BENCH_MARKER"


class DeviceLost(RuntimeError):
    """An implementation broke the CUDA context (e.g. an illegal memory access in a peer kernel)."""

    def __init__(self, row: str, impl: str, stage: str, error: str) -> None:
        super().__init__(f"{row} {impl} ({stage}): {error}")
        self.info = {"row": row, "impl": impl, "stage": stage, "error": error}


def is_fatal(exc: BaseException) -> bool:
    """Whether ``exc`` leaves the CUDA context unusable (all later CUDA calls would fail)."""
    text = f"{type(exc).__name__}: {exc}"
    return any(m in text for m in _FATAL_MARKERS)


def _stage(row: str, impl: str, stage: str) -> None:
    """Record what runs now (for ``--isolate``) and fire an injected fault if one is set here."""
    marker = os.environ.get(MARKER_ENV)
    if marker:
        with open(marker, "w") as f:
            f.write(json.dumps({"row": row, "impl": impl, "stage": stage}))
    fault = os.environ.get(FAULT_ENV, "")
    if fault and stage == "check":
        want_row, _, rest = fault.partition(":")
        want_impl, _, how = rest.partition(":")
        if (want_row, want_impl) == (row, impl):
            if how == "abort":
                os.abort()
            raise RuntimeError(f"CUDA error: an illegal memory access was encountered ({FAULT_ENV})")


def _fatal_check(exc: BaseException, row: str, impl: str, stage: str) -> None:
    if is_fatal(exc):
        raise DeviceLost(row, impl, stage, _short_error(exc)) from exc


@dataclasses.dataclass
class Settings:
    device: torch.device
    dtype: torch.dtype
    modes: tuple[str, ...]  # subset of ("fwd", "fwdbwd"), in order
    check: bool = True
    timing: bool = True
    check_tokens: int | None = None  # None: the family's default budget (all tokens on a CPU)
    ref_max_tokens: int = 4096
    warmup_ms: float = 25.0
    rep_ms: float = 100.0
    cpu_reps: int = 3
    tol_max: float | None = None
    tol_rms: float | None = None

    @property
    def backward(self) -> bool:
        return "fwdbwd" in self.modes

    def tolerances(self) -> tuple[float, float]:
        tmax, trms = TOLERANCES.get(self.dtype, (5e-3, 2e-3))
        return (
            self.tol_max if self.tol_max is not None else tmax,
            self.tol_rms if self.tol_rms is not None else trms,
        )


# ---------------------------------------------------------------------------------------------
# correctness


def compare(out: torch.Tensor, gold: torch.Tensor) -> dict[str, float]:
    """Errors of ``out`` against ``gold``, computed in fp64 on their device."""
    a = out.detach().to(torch.float64)
    b = gold.detach().to(device=a.device, dtype=torch.float64)
    if a.shape != b.shape:
        raise ValueError(f"shape {tuple(a.shape)} differs from the reference's {tuple(b.shape)}")
    if a.numel() == 0:
        return {"max_abs": 0.0, "max_rel": 0.0, "rms_rel": 0.0, "nonfinite": 0}
    nonfinite = int((~torch.isfinite(a)).sum())
    ref_max = float(b.abs().max())
    ref_rms = float(b.pow(2).mean().sqrt())
    if nonfinite:
        return {"max_abs": math.inf, "max_rel": math.inf, "rms_rel": math.inf, "nonfinite": nonfinite}
    d = (a - b).abs()
    max_abs = float(d.max())
    rms = float(d.pow(2).mean().sqrt())
    return {
        "max_abs": max_abs,
        "max_rel": max_abs / ref_max if ref_max > 0 else (0.0 if max_abs == 0 else math.inf),
        "rms_rel": rms / ref_rms if ref_rms > 0 else (0.0 if rms == 0 else math.inf),
        "nonfinite": 0,
    }


def choose_check_subset(lengths: list[int], budget: int, seed: int) -> tuple[list[int], int | None]:
    """Sequences the gold reference runs on: ``(seq_ids, truncate)``.

    All of them if the batch fits ``budget`` tokens; else the longest sequence that fits, the
    shortest non-empty one, then others in seeded order while they fit. If none fits, the
    shortest sequence cut to ``budget`` tokens (``truncate``; a separate call).
    """
    if sum(lengths) <= budget:
        return list(range(len(lengths))), None
    nonempty = [i for i, n in enumerate(lengths) if n > 0]
    fits = [i for i in nonempty if lengths[i] <= budget]
    if not fits:
        shortest = min(nonempty, key=lambda i: lengths[i])
        return [shortest], budget
    chosen = [max(fits, key=lambda i: lengths[i])]
    used = lengths[chosen[0]]
    shortest = min(fits, key=lambda i: lengths[i])
    if shortest not in chosen and used + lengths[shortest] <= budget:
        chosen.append(shortest)
        used += lengths[shortest]
    rest = [i for i in fits if i not in chosen]
    random.Random(seed).shuffle(rest)
    for i in rest:
        if used + lengths[i] <= budget:
            chosen.append(i)
            used += lengths[i]
    return sorted(chosen), None


def _outputs(
    o: torch.Tensor, leaves: dict[str, torch.Tensor], names: tuple[str, ...]
) -> dict[str, torch.Tensor]:
    out = {"o": o.detach()}
    for n in names:
        g = leaves[n].grad
        out["d" + n] = g.detach() if g is not None else None
    return out


def _run_once(
    fn, leaves: dict[str, torch.Tensor], do: torch.Tensor | None, names: tuple[str, ...]
) -> dict[str, torch.Tensor]:
    o = fn(leaves)
    if do is not None:
        o.backward(do.to(o.dtype))
    return _outputs(o, leaves, names if do is not None else ())


def _gold(p: Problem, do: torch.Tensor | None, backward: bool) -> dict[str, torch.Tensor]:
    gold_dtype = torch.float64 if p.device.type == "cpu" else torch.float32
    gp = p.cast(gold_dtype)
    leaves = gp.leaves()
    fam = FAMILIES[p.family]
    prev = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False  # the gold must be true fp32
    try:
        return _run_once(
            lambda t: fam.call(gp, t, "reference"),
            leaves,
            do.to(gold_dtype) if backward else None,
            p.grad_names,
        )
    finally:
        torch.backends.cuda.matmul.allow_tf32 = prev


def _short_error(exc: BaseException) -> str:
    msg = str(exc).strip().splitlines()
    first = msg[0] if msg else ""
    return f"{type(exc).__name__}: {first}"[:300]


# ---------------------------------------------------------------------------------------------
# timing


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _time(fn, s: Settings, grads: list[torch.Tensor]) -> float:
    """Milliseconds per call: do_bench median on CUDA, wall-clock median on a CPU."""
    if s.device.type == "cuda":
        from triton.testing import do_bench

        return float(
            do_bench(fn, warmup=s.warmup_ms, rep=s.rep_ms, grad_to_none=grads or None, return_mode="median")
        )
    times = []
    for _ in range(max(1, s.cpu_reps)):
        for g in grads:
            g.grad = None
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def _peak_mib(fn, s: Settings, leaves: dict[str, torch.Tensor]) -> float | None:
    if s.device.type != "cuda":
        return None
    for t in leaves.values():
        t.grad = None
    gc.collect()
    _sync(s.device)
    torch.cuda.reset_peak_memory_stats(s.device)
    base = torch.cuda.memory_allocated(s.device)
    fn()
    _sync(s.device)
    peak = torch.cuda.max_memory_allocated(s.device) - base
    for t in leaves.values():
        t.grad = None
    return peak / 2**20


# ---------------------------------------------------------------------------------------------
# one row


def _out_shape(p: Problem) -> tuple[int, ...]:
    pr = p.params
    t = p.tokens
    if p.family == "attention":
        return (t, pr["hq"], pr["dv"])
    if p.family == "hstu":
        return (t, pr["h"], pr["dv"])
    return (t, pr["hv"], pr["v"])


def run_row(row: Row, impls: list[Impl], s: Settings, progress: Progress, notes: list[str]) -> dict[str, Any]:
    """Everything the report needs about one row (JSON-ready dict)."""
    fam = FAMILIES[row.family]
    p = fam.build(row, s.device, s.dtype)
    gen = torch.Generator().manual_seed(row.seed + 7)
    do = torch.randn(_out_shape(p), generator=gen, dtype=torch.float32).to(device=s.device, dtype=s.dtype)
    result: dict[str, Any] = {
        "family": row.family,
        "row": row.name,
        "about": row.about,
        "config": fam.describe(p),
        "lengths": p.lengths,
        "lengths_summary": describe_lengths(p.lengths),
        "tokens": p.tokens,
        "params": {k: (list(v) if isinstance(v, tuple) else v) for k, v in p.params.items()},
        "seq_params": p.seq_host,
        "flops": fam.flops(p),
        "rate_unit": fam.rate_unit,
        "notes": list(notes),
        "impls": {},
    }
    res = result["impls"]
    prepared: dict[str, Prepared] = {}
    for impl in impls:
        entry = {"kind": impl.kind, "version": _safe(impl.version), "label": "", "note": ""}
        res[impl.name] = entry
        progress.status(f"{row.key}: prepare {impl.name}")
        try:
            _stage(row.key, impl.name, "prepare")
            prepared[impl.name] = prep = impl.prepare(p)
            entry.update(label=prep.label, note=prep.note, status="pending")
        except Unavailable as exc:
            entry.update(status="n/a", reason=str(exc))
        except Exception as exc:
            _fatal_check(exc, row.key, impl.name, "prepare")
            entry.update(status="error", reason=f"prepare: {_short_error(exc)}")
            progress.log(f"{row.key} {impl.name}: prepare failed\n{traceback.format_exc()}")

    # -- correctness gate -------------------------------------------------------------------
    check: dict[str, Any] = {"ran": False}
    result["check"] = check
    if not s.check:
        check["why_not"] = "--no-check"
    elif prepared:
        budget = s.check_tokens or (fam.check_tokens if s.device.type == "cuda" else 1 << 62)
        seq_ids, truncate = choose_check_subset(p.lengths, budget, row.seed)
        sub, idx = p.subset(seq_ids, truncate)
        separate = truncate is not None
        gold_dtype = "fp64" if s.device.type == "cpu" else "fp32"
        if separate:
            what = (
                f"separate call on the first {sub.tokens} tokens of sequence {seq_ids[0]} "
                f"(no whole sequence fits the {budget}-token check budget)"
            )
        elif len(seq_ids) == len(p.lengths):
            what = f"all {len(seq_ids)} sequences ({p.tokens} tokens) of the timed call"
        else:
            what = (
                f"rows of {len(seq_ids)}/{len(p.lengths)} sequences ({sub.tokens}/{p.tokens} tokens, "
                f"{describe_lengths(sub.lengths)}) taken from the full timed call"
            )
        check.update(
            seq_ids=seq_ids,
            truncate=truncate,
            tokens=sub.tokens,
            compared=what + (" (o and every input gradient)" if s.backward else " (o)"),
            gold=f"jagattn reference backend in {gold_dtype} on {s.device.type}",
            tolerance={"max_rel": s.tolerances()[0], "rms_rel": s.tolerances()[1]},
        )
        do_sub = do.index_select(0, idx) if not separate else do[: sub.tokens]
        progress.status(f"{row.key}: gold reference ({what})")
        gold = None
        try:
            _stage(row.key, "reference (gold)", "gold")
            gold = _gold(sub, do_sub, s.backward)
            check["ran"] = True
        except Exception as exc:
            _fatal_check(exc, row.key, "reference (gold)", "gold")
            check["why_not"] = f"reference failed: {_short_error(exc)}"
            progress.log(f"{row.key}: gold reference failed: {_short_error(exc)}")
        if gold is not None:
            for impl in impls:
                if impl.name not in prepared:
                    continue
                entry = res[impl.name]
                progress.status(f"{row.key}: check {impl.name}")
                try:
                    _stage(row.key, impl.name, "check")
                    if separate or impl.is_reference:
                        # the reference is only ever run on the check subset (it is slow at 32k tokens)
                        prep = impl.prepare(sub)
                        out = _run_once(prep.fn, sub.leaves(), do_sub if s.backward else None, p.grad_names)
                    else:
                        out = _run_once(
                            prepared[impl.name].fn, p.leaves(), do if s.backward else None, p.grad_names
                        )
                        out = {k: (v.index_select(0, idx) if v is not None else None) for k, v in out.items()}
                    errs = {}
                    for k, g in gold.items():
                        if g is None:
                            continue
                        if out.get(k) is None:
                            errs[k] = {
                                "missing": True,
                                "max_abs": math.inf,
                                "max_rel": math.inf,
                                "rms_rel": math.inf,
                            }
                        else:
                            errs[k] = compare(out[k], g)
                    del out
                    tmax, trms = s.tolerances()
                    bad = [k for k, e in errs.items() if not (e["max_rel"] <= tmax and e["rms_rel"] <= trms)]
                    entry["errors"] = errs
                    entry["max_abs"] = max(e["max_abs"] for e in errs.values())
                    entry["max_rel"] = max(e["max_rel"] for e in errs.values())
                    entry["rms_rel"] = max(e["rms_rel"] for e in errs.values())
                    entry["gate"] = "pass" if not bad else "FAIL"
                    if bad:
                        entry["gate_failed_on"] = bad
                        progress.log(f"{row.key} {impl.name}: FAILED the correctness gate on {bad}")
                except Exception as exc:
                    _fatal_check(exc, row.key, impl.name, "check")
                    entry["gate"] = "FAIL"
                    entry["status"] = "error"
                    entry["reason"] = f"check: {_short_error(exc)}"
                    progress.log(f"{row.key} {impl.name}: check raised {_short_error(exc)}")
                _free(s.device)
        del gold
        _free(s.device)

    # -- timing ------------------------------------------------------------------------------
    for impl in impls:
        entry = res[impl.name]
        progress.advance()
        if impl.name not in prepared or entry.get("status") == "error":
            continue
        if not s.timing:
            entry["status"] = {"pass": "ok", "FAIL": "FAILED"}.get(entry.get("gate"), "unchecked")
            continue
        if impl.is_reference and p.tokens > s.ref_max_tokens:
            entry["status"] = "not timed"
            entry["reason"] = f"reference not timed above {s.ref_max_tokens} tokens (--ref-max-tokens)"
            continue
        ms: dict[str, float] = {}
        try:
            _stage(row.key, impl.name, "timing")
            _time_impl(
                prepared[impl.name].fn,
                p,
                do,
                s,
                lambda m, n=impl.name: progress.status(f"{row.key}: {m} {n}"),
                ms,
                entry,
            )
            entry["status"] = {"pass": "ok", "FAIL": "FAILED"}.get(entry.get("gate"), "unchecked")
        except torch.cuda.OutOfMemoryError as exc:
            entry.update(status="error", reason=f"out of memory: {_short_error(exc)}", ms=ms or None)
        except Exception as exc:
            _fatal_check(exc, row.key, impl.name, "timing")
            entry.update(status="error", reason=f"timing: {_short_error(exc)}", ms=ms or None)
            progress.log(f"{row.key} {impl.name}: timing raised\n{traceback.format_exc()}")
        _free(s.device)
    for entry in res.values():
        if entry.get("status") == "pending":
            entry["status"] = "unchecked"
    return result


def _time_impl(fn, p: Problem, do: torch.Tensor, s: Settings, status, ms: dict, entry: dict) -> None:
    """Warm up (autotune / compile), time each mode into ``ms``, then measure peak memory."""
    leaves = p.leaves()
    grads = [leaves[n] for n in p.grad_names]

    def fwd():
        return fn(leaves)

    def fwdbwd():
        fn(leaves).backward(do)

    if s.device.type == "cuda":  # CPU: no autotuning to absorb (the interpreter runs one config)
        status("warm-up/autotune")
        fwd()
        if s.backward:
            fwdbwd()
        _sync(s.device)
    for g in grads:
        g.grad = None
    for mode in s.modes:
        status(f"time {mode}")
        t0 = time.time()
        ms[mode] = _time(fwd if mode == "fwd" else fwdbwd, s, grads if mode == "fwdbwd" else [])
        if s.device.type == "cuda":
            # the window's SM clock is filled in at the end of the run (clocks.Sampler.fill)
            entry.setdefault(clocks.WINDOWS, {})[mode] = [t0, time.time()]
    if "fwd" in ms and "fwdbwd" in ms:
        ms["bwd"] = ms["fwdbwd"] - ms["fwd"]
    entry["ms"] = ms
    peak = _peak_mib(fwdbwd if s.backward else fwd, s, leaves)
    if peak is not None:
        entry["peak_mib"] = peak
        entry["peak_of"] = "fwd+bwd" if s.backward else "fwd"


def _safe(fn) -> str:
    try:
        return fn()
    except Exception:
        return ""


def _free(device: torch.device) -> None:
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()
