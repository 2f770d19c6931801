"""Same-process A/B of kernel *source* variants on the BENCHMARKS.md rows, without editing the library.

A variant is a list of text substitutions in ``@triton.jit`` functions, applied in memory through
Triton's ``JITFunction._unsafe_update_src`` (every jagattn JIT function then gets its hash reset and its
in-memory kernel cache cleared, so the next launch compiles the patched source; the on-disk cache is
keyed by the source, so the variants never share a binary). Variants live in a Python file::

    VARIANTS = {
        "ws": [("jagattn.hstu.triton.fwd", "_hstu_fwd_kernel",
                "for t in range(0, nb + n_diag):",
                "for t in tl.range(0, nb + n_diag, warp_specialize=True):")],
    }

An entry may instead be a pair of callables ``(enter, exit)`` run around the variant (e.g. to swap an
autotuner's config list). Each substitution's old text must occur exactly once in the function's source (else the variant is
reported as not applicable and skipped). Per row (``jagattn.bench`` rows of one family, bf16, the public
function with ``backend="triton"``; the suite's ``JAGATTN_AUTOTUNE=0`` first-listed configs):

- outputs: ``o`` and the gradients of ``default`` are the yardstick; every variant reports bitwise equal
  or ``max |a - b| / max |b|`` per tensor (a compile or launch error is recorded, not raised);
- timing: forward (no grad) and forward+backward medians (``triton.testing.do_bench``), default and
  variants alternated over ``--repeats`` passes so drift hits all; bwd = fwd+bwd - fwd.

Usage on the GPU machine::

    PYTHONPATH=src python3 benchmarks/src_variant_ab.py --family hstu --variants <file.py> --out $OUT \
        [--rows B256-N1024,ctx6-w256] [--only ws,flat] [--repeats 2] [--profile]

Writes ``$OUT/src_variant_ab_<family>.json`` (rewritten after every row). ``--smoke`` runs the smoke rows
under the Triton interpreter on the CPU (times meaningless) to test the script.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import os
import runpy
import sys
import time
import traceback

SMOKE = "--smoke" in sys.argv
if SMOKE:
    os.environ["TRITON_INTERPRET"] = "1"
os.environ.setdefault("JAGATTN_AUTOTUNE", "0")

import torch  # noqa: E402
import triton  # noqa: E402
from triton.runtime.jit import JITFunction  # noqa: E402


def _jit_of(obj):
    """The ``JITFunction`` under an autotuner / heuristics wrapper (``None`` under the interpreter, whose
    functions are plain Python: ``--smoke`` checks that the substitutions apply but runs the unpatched
    code, and says so in the log)."""
    while not isinstance(obj, JITFunction):
        if not hasattr(obj, "fn"):
            return None
        obj = obj.fn
    return obj


def _src_of(obj) -> str:
    jf = _jit_of(obj)
    if jf is not None:
        return jf.src
    import inspect
    import textwrap

    while hasattr(obj, "fn"):
        obj = obj.fn
    return textwrap.dedent(inspect.getsource(obj))


def _all_jagattn_jit() -> list[JITFunction]:
    """Every JIT function of the package, including those a module holds only inside an autotuner or
    heuristics wrapper (``@triton.autotune`` on the kernel itself, as in the attention kernels). Before
    session 19 those were missed: their hash and compiled kernels survived a variant, so a variant of a
    helper they call ran the unpatched kernel (bitwise the same outputs, timings of the default)."""
    out = []
    for name, mod in list(sys.modules.items()):
        if not name.startswith("jagattn") or mod is None:
            continue
        for v in vars(mod).values():
            jf = _jit_of(v) if hasattr(v, "fn") or isinstance(v, JITFunction) else None
            if jf is not None and jf not in out:
                out.append(jf)
    return out


def _set_src(jf: JITFunction, src: str) -> None:
    if hasattr(jf, "_unsafe_update_src"):
        jf._unsafe_update_src(src)
    else:  # older Triton: src is a plain attribute
        object.__setattr__(jf, "src", src)
        jf.hash = None


def _reset_caches() -> None:
    for name, mod in list(sys.modules.items()):  # autotuners' chosen configs (a hook may swap their lists)
        if name.startswith("jagattn") and mod is not None:
            for v in vars(mod).values():
                if isinstance(v, triton.runtime.Autotuner):
                    v.cache.clear()
    for jf in _all_jagattn_jit():
        jf.hash = None
        caches = getattr(jf, "device_caches", None)
        if caches is not None:
            caches.clear()
        if hasattr(jf, "cache"):  # older Triton: {device: {key: kernel}}
            with contextlib.suppress(Exception):
                jf.cache.clear()


class Variant:
    """Applies and restores one variant's substitutions (a context manager)."""

    def __init__(self, name: str, subs: list[tuple[str, str, str, str]]):
        self.name, self.subs, self.saved = name, subs, []

    def check(self) -> str | None:
        """``None`` if every substitution applies exactly once, else why not."""
        for sub in self.subs:
            if len(sub) == 2:
                continue
            mod, fn, old, _ = sub
            n = _src_of(getattr(importlib.import_module(mod), fn)).count(old)
            if n != 1:
                return f"{mod}.{fn}: old text found {n} times: {old!r}"
        return None

    def __enter__(self):
        for sub in self.subs:
            if len(sub) == 2:
                sub[0]()
                continue
            mod, fn, old, new = sub
            jf = _jit_of(getattr(importlib.import_module(mod), fn))
            if jf is None:  # interpreter (--smoke): not patched
                continue
            self.saved.append((jf, jf.src))
            _set_src(jf, jf.src.replace(old, new))
        _reset_caches()
        return self

    def __exit__(self, *exc):
        for jf, src in reversed(self.saved):
            _set_src(jf, src)
        self.saved.clear()
        for sub in reversed(self.subs):
            if len(sub) == 2:
                sub[1]()
        _reset_caches()
        return False


DEFAULT = Variant("default", [])


def bench_ms(fn, grads=None) -> float:
    if SMOKE:
        t0 = time.perf_counter()
        fn()
        return (time.perf_counter() - t0) * 1e3
    return float(triton.testing.do_bench(fn, warmup=25, rep=100, grad_to_none=grads, return_mode="median"))


def kernel_ms(fn, reps: int = 5) -> dict[str, float]:
    """Mean CUDA ms per call of every kernel ``fn`` launches (``gated_delta_triton.kernel_times``), largest
    first."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from gated_delta_triton import kernel_times

    return {k: round(t, 4) for k, t in sorted(kernel_times(fn, reps).items(), key=lambda kv: -kv[1])}


def run_row(fam, row, variants: list[Variant], repeats: int, log, profile: bool = False) -> dict:
    device = "cpu" if SMOKE else "cuda"
    dtype = torch.float16 if SMOKE else torch.bfloat16
    p = fam.build(row, torch.device(device), dtype)
    leaves = p.leaves()
    grads_of = list(leaves.values())
    gen = torch.Generator().manual_seed(7)

    def fwd():
        with torch.no_grad():
            return fam.call(p, leaves, "triton")

    o0 = fam.call(p, leaves, "triton")
    do = torch.randn(o0.shape, generator=gen, dtype=torch.float32).to(device=device, dtype=o0.dtype)
    del o0

    def fwd_bwd():
        o = fam.call(p, leaves, "triton")
        o.backward(do)

    def outputs():
        o = fam.call(p, leaves, "triton")
        gs = torch.autograd.grad(o, grads_of, do)
        return [o.detach(), *gs]

    names = ["o", *(f"d{k}" for k in leaves)]
    rec: dict = {"row": row.key, "describe": fam.describe(p), "variants": {}}
    ref = None
    for v in [DEFAULT, *variants]:
        r = rec["variants"].setdefault(v.name, {"fwd_ms": [], "fwdbwd_ms": []})
        try:
            with v:
                out = outputs()
                torch.cuda.synchronize() if device == "cuda" else None
        except Exception as e:  # compile or launch failure: record, go on
            r["error"] = f"{type(e).__name__}: {str(e)[:600]}"
            log(f"  {v.name}: ERROR {r['error'][:300]}")
            log(traceback.format_exc()[-1500:])
            continue
        if ref is None:
            ref = out
            continue
        diffs = {}
        for n, a, b in zip(names, out, ref, strict=True):
            if torch.equal(a, b):
                diffs[n] = "bitwise"
            else:
                diffs[n] = float((a.float() - b.float()).abs().max() / b.float().abs().max().clamp_min(1e-30))
        r["diff_vs_default"] = diffs
        log(f"  {v.name}: {diffs}")
    ok = [v for v in [DEFAULT, *variants] if "error" not in rec["variants"][v.name]]
    for _ in range(repeats):
        for v in ok:
            r = rec["variants"][v.name]
            with v:
                r["fwd_ms"].append(bench_ms(fwd))
                r["fwdbwd_ms"].append(bench_ms(fwd_bwd, grads_of))
    if profile and not SMOKE:
        for v in ok:
            with v:
                ks = kernel_ms(fwd_bwd)
            rec["variants"][v.name]["kernels_fwdbwd_ms"] = ks
            log(
                f"  {v.name} kernels of one fwd+bwd (ms): " + ", ".join(f"{k} {t:.3f}" for k, t in ks.items())
            )
    base = rec["variants"]["default"]
    for v in ok:
        r = rec["variants"][v.name]
        f = min(r["fwd_ms"])
        fb = min(r["fwdbwd_ms"])
        r["fwd"] = f
        r["bwd"] = fb - f
        r["x_fwd"] = min(base["fwd_ms"]) / f
        r["x_bwd"] = (min(base["fwdbwd_ms"]) - min(base["fwd_ms"])) / max(fb - f, 1e-9)
        log(
            f"  {v.name:>24}: fwd {f:.3f} ms (x{r['x_fwd']:.3f}) bwd {r['bwd']:.3f} ms (x{r['x_bwd']:.3f})"
            f"  all fwd {[round(t, 3) for t in r['fwd_ms']]} fwdbwd {[round(t, 3) for t in r['fwdbwd_ms']]}"
        )
    return rec


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--family", required=True, choices=("attention", "hstu", "gated_delta"))
    ap.add_argument("--variants", required=True, help="Python file defining VARIANTS")
    ap.add_argument("--only", default="", help="comma list of variant names (default: all)")
    ap.add_argument("--rows", default="", help="comma list of row names (default: the family's suite)")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--profile", action="store_true", help="per-kernel CUDA ms of one fwd+bwd per variant")
    args = ap.parse_args()

    import jagattn  # noqa: F401  (imports every family module, so their JIT functions are found)
    from jagattn.bench import suites
    from jagattn.bench.cases import FAMILIES

    fam = FAMILIES[args.family]
    rows = suites.select_rows([args.family], "smoke" if SMOKE else (args.rows or "default"))
    spec = runpy.run_path(args.variants)["VARIANTS"]
    only = [s for s in args.only.split(",") if s]
    variants = [Variant(n, subs) for n, subs in spec.items() if not only or n in only]
    os.makedirs(args.out, exist_ok=True)
    path_log = os.path.join(args.out, f"src_variant_ab_{args.family}.log")
    path_json = os.path.join(args.out, f"src_variant_ab_{args.family}.json")
    fh = open(path_log, "a")  # noqa: SIM115  (closed at the end; every line flushed)

    def log(msg: str) -> None:
        print(msg, flush=True)
        fh.write(msg + "\n")
        fh.flush()

    result = {
        "torch": torch.__version__,
        "triton": triton.__version__,
        "device": "cpu" if SMOKE else torch.cuda.get_device_name(),
        "git_sha": os.environ.get("JAGATTN_GIT_SHA", ""),
        "variants": {
            n: [list(x) if len(x) == 4 else "hook" for x in spec[n]] for n in spec if not only or n in only
        },
        "rows": [],
    }
    usable = []
    for v in variants:
        why = v.check()
        if why:
            log(f"variant {v.name}: not applicable: {why}")
            result.setdefault("not_applicable", {})[v.name] = why
        else:
            usable.append(v)
    if SMOKE:
        log("smoke: the interpreter runs the unpatched source (variants are only checked to apply)")
    log(
        f"{result['device']} torch {result['torch']} triton {result['triton']} variants {[v.name for v in usable]}"
    )
    for row in rows:
        log(f"row {row.key}")
        result["rows"].append(run_row(fam, row, usable, args.repeats, log, args.profile))
        with open(path_json, "w") as f:
            json.dump(result, f, indent=1)
    fh.close()


if __name__ == "__main__":
    main()
