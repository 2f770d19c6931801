"""Random-input fuzz of every op's Triton backend against the SPEC section 5 rule.

Each case draws a random jagged batch (lengths incl. 0 and 1, heads, head dims, dtype and the op's
optional arguments), runs ``backend="triton"`` (forward and every input gradient), the reference in
fp64 (gold) and the reference in the input dtype (the allowance), and applies
``jagattn.testing.check_close`` to every output. Failures print a one-line reproducer
(``--op OP --seed N``); the run ends with a count per op. CPU: the Triton interpreter (set
``TRITON_INTERPRET=1``; small shapes); GPU: the real kernels (``--device cuda``, larger shapes with
``--scale``).

Head dims: small on the CPU (interpreter time); on a GPU the draw also takes the production sizes up to
256 (session 9: Triton 3.6 crashed or ran out of shared memory only at some head dims; ``--dims A,B``
fixes both). GPU reproducers recorded before that change (session 9 logs) need their ``--dims``.

``--peer fla`` (``--op gated_delta`` only, GPU): the backend under test is FLA's
``chunk_gated_delta_rule`` (fla-core) instead of ours, on the same cases, gold and allowance: does the
peer pass the same rule?

Session 8 found with its first version: the fp16 gated delta path rounded the normalised q/k to fp16
(dg max-abs 2.14x the allowance on lengths [14, 50, 59]); fixed in ``gated_delta/ops.py::_prep``.

    TRITON_INTERPRET=1 PYTHONPATH=src python benchmarks/fuzz_spec_rule.py --cases 200 [--op gated_delta]
    TRITON_INTERPRET=1 PYTHONPATH=src python benchmarks/fuzz_spec_rule.py --op hstu --seed 17   # one case
"""

from __future__ import annotations

import argparse
import random
import sys
import time
import traceback

import torch
import torch.nn.functional as F

if not torch.cuda.is_available():
    # the CPU run is the interpreter's (without it every case "failed" with NotSupportedError in 2 s: session 48)
    import os

    os.environ.setdefault("TRITON_INTERPRET", "1")

import jagattn  # noqa: E402
from jagattn import testing  # noqa: E402
from jagattn.attention.reference import attention_reference  # noqa: E402
from jagattn.gated_delta.reference import gated_delta_reference  # noqa: E402
from jagattn.hstu.reference import hstu_reference  # noqa: E402


def _lengths(rng: random.Random, max_len: int, scale: int) -> list[int]:
    n = rng.randint(1, 4)
    pool = [0, 1, rng.randint(2, max_len * scale), rng.randint(max_len * scale // 2, max_len * scale)]
    lengths = [rng.choice(pool) for _ in range(n)]
    return lengths if CAP_LEN is None else [min(x, CAP_LEN) for x in lengths]


# --cap-len N: every drawn sequence length capped at N after the draw (tiny batches: where the SPEC rule's
# maximum over few elements is noisiest); the other draws of a seed stay the same
CAP_LEN: int | None = None


# --dims A,B: the two head dims of every case (attention d/dv, HSTU dq/dv, gated delta dk/dv) instead of
# the random draw; the draw still happens, so every other choice of a seed stays the same
DIMS: tuple[int, int] | None = None
# --dtype bf16/fp16/fp32 (bf16 GPU only): the dtype of every case instead of the random draw (drawn anyway, as
# --dims)
DTYPE: torch.dtype | None = None


def _dims(a: int, b: int) -> tuple[int, int]:
    return DIMS if DIMS is not None else (a, b)


# --g-shift X (gated delta): the gate shift of every case instead of the draw (drawn anyway, as --dims)
G_SHIFT: float | None = None


# --peer fla: --op gated_delta runs FLA's chunk_gated_delta_rule instead of ours (_FLA: it, set in main)
PEER = "jagattn"
_FLA = None


def _load_fla():
    """FLA's ``chunk_gated_delta_rule``, as benchmarks/gated_delta_triton.py ``_fla()`` (not imported from
    there: it imports triton and jagattn's kernels at module level); one line and exit 2 when FLA does not
    import."""
    import warnings

    try:
        import fla.ops.common.chunk_o as chunk_o
        from fla.ops.gated_delta_rule import chunk_gated_delta_rule
    except Exception as exc:  # noqa: BLE001 (not installed, or no GPU/Triton)
        print(f"--peer fla: FLA does not import ({type(exc).__name__}: {exc})", file=sys.stderr, flush=True)
        sys.exit(2)
    if getattr(chunk_o, "TRITON_ABOVE_3_7_1", True) is False:
        chunk_o.TRITON_ABOVE_3_7_1 = True  # Hopper with Triton < 3.7.1: its gated backward guard bypassed
    # short sequences (T < H) trip FLA's head-first layout hint on every call
    warnings.filterwarnings("ignore", message="Input tensor shape suggests potential format mismatch")
    return chunk_gated_delta_rule


def _leaves(args: dict, names) -> dict:
    return {n: args[n].detach().clone().requires_grad_(True) for n in names if args.get(n) is not None}


# --rounded-grads: the weights of the loss (the output gradients) are rounded to the dtype of each output of
# the run under test for every run, the gold included, as a test that calls ``out.backward(grad)`` with a
# grad in the output's dtype does; by default the weights stay fp64, so the gold's output gradient is exact
# while the backend's (and the input-dtype reference run's) arrives rounded to fp16/bf16 (session 15)
ROUNDED_GRADS = False


def _outputs_and_grads(fn, args: dict, grads: tuple[str, ...], seed: int, wdtypes: dict | None = None):
    """(names, tensors): fn's outputs and the gradients of a random-weighted sum w.r.t. ``grads``; with
    ``wdtypes`` ({output name: dtype}) each output's weights are rounded to that dtype first."""
    leaves = _leaves(args, grads)
    outs = fn({**args, **leaves})
    outs = {k: v for k, v in outs.items() if v is not None}
    gen = torch.Generator().manual_seed(seed)
    diff = {k: v for k, v in outs.items() if v.dtype.is_floating_point and v.requires_grad}
    res = {k: v.detach() for k, v in outs.items()}
    wdt = wdtypes or {}

    def weights(k, v):
        w = torch.randn(v.shape, generator=gen, dtype=torch.float64)
        return (w.to(wdt[k]).double() if k in wdt else w).to(v.device)

    if leaves and diff:
        loss = sum((v.double() * weights(k, v)).nan_to_num(0.0, 0.0, 0.0).sum() for k, v in diff.items())
        gs = torch.autograd.grad(loss, list(leaves.values()), allow_unused=True)
        res.update({"d" + n: g for n, g in zip(leaves, gs, strict=True) if g is not None})
    return res


def case_attention(rng: random.Random, dev: str, dtype, scale: int):
    hkv = rng.choice([1, 2])
    hq = hkv * rng.choice([1, 2, 3])
    d = rng.choice([16, 32, 40, 64] if dev == "cpu" else [16, 32, 40, 64, 96, 128, 256])
    dv = rng.choice([d, 16, 32] if dev == "cpu" else [d, 16, 32, 128])
    d, dv = _dims(d, dv)
    lq = _lengths(rng, 40, scale)
    lk = [x if rng.random() < 0.6 else rng.randint(0, 40 * scale) for x in lq]
    causal = rng.random() < 0.6
    window = (-1, -1)
    if rng.random() < 0.4:
        window = (rng.choice([-1, 0, 3, 17]), rng.choice([-1, 0, 5]) if not causal else 0)
    # fp32: forward only and no softcap (what the Triton backend accepts in fp32)
    softcap = rng.choice([0.0, 0.0, 5.0]) if dtype != torch.float32 else 0.0
    sc = rng.choice([None, 0.3])
    gen = testing.generator(rng.randint(0, 2**31))
    args = {
        "q": testing.randn([sum(lq), hq, d], dtype=dtype, device=dev, generator=gen),
        "k": testing.randn([sum(lk), hkv, d], dtype=dtype, device=dev, generator=gen),
        "v": testing.randn([sum(lk), hkv, dv], dtype=dtype, device=dev, generator=gen),
    }
    cq, ck = testing.cu_seqlens(lq, dev), testing.cu_seqlens(lk, dev)
    kw = dict(causal=causal, window=window, softcap=softcap, scale=sc)
    desc = f"lq={lq} lk={lk} hq={hq} hkv={hkv} d={d} dv={dv} {kw}"

    def run(a):
        o, lse = jagattn.attention(
            a["q"], a["k"], a["v"], cq, ck, max(lq), max(lk), return_lse=True, backend="triton", **kw
        )
        return {"o": o, "lse": lse}

    def ref(a, cdt):
        o, lse = attention_reference(a["q"], a["k"], a["v"], cq, ck, compute_dtype=cdt, **kw)
        return {"o": o, "lse": lse}

    return desc, args, ("q", "k", "v") if dtype != torch.float32 else (), run, ref


def case_hstu(rng: random.Random, dev: str, dtype, scale: int):
    h = rng.choice([1, 2])
    dq = rng.choice([16, 32, 48] if dev == "cpu" else [16, 32, 48, 64, 128, 256])
    dv = rng.choice([dq, 16, 32] if dev == "cpu" else [dq, 16, 32, 128])
    dq, dv = _dims(dq, dv)
    lengths = _lengths(rng, 48, scale)
    n = max(lengths) if max(lengths) > 0 else 1
    nt = None
    if rng.random() < 0.5:
        nt = torch.tensor([rng.randint(0, x) for x in lengths], dtype=torch.int64, device=dev)
    kw = dict(
        alpha=rng.choice([0.25, 1.0 / dq]),
        contextual_seq_len=rng.choice([0, 0, 2, 5]),
        max_attn_len=rng.choice([0, 0, 4, 16]),
    )
    if kw["max_attn_len"] and rng.random() < 0.5:
        kw["min_full_attn_seq_len"] = rng.choice([3, 9])
    s = rng.choice([None, n + 7])
    gen = testing.generator(rng.randint(0, 2**31))
    t = sum(lengths)
    args = {
        "q": testing.randn([t, h, dq], dtype=dtype, device=dev, generator=gen),
        "k": testing.randn([t, h, dq], dtype=dtype, device=dev, generator=gen),
        "v": testing.randn([t, h, dv], dtype=dtype, device=dev, generator=gen),
    }
    cu = testing.cu_seqlens(lengths, dev)
    desc = f"lengths={lengths} h={h} dq={dq} dv={dv} nt={None if nt is None else nt.tolist()} S={s} {kw}"

    def run(a):
        o = jagattn.hstu_attention(
            a["q"], a["k"], a["v"], cu, n, num_targets=nt, scaling_seqlen=s, backend="triton", **kw
        )
        return {"o": o}

    def ref(a, cdt):
        o = hstu_reference(
            a["q"], a["k"], a["v"], cu, scale_len=s or n, num_targets=nt, compute_dtype=cdt, **kw
        )
        return {"o": o}

    return desc, args, ("q", "k", "v"), run, ref


def case_gated_delta(rng: random.Random, dev: str, dtype, scale: int, per_key: bool = False):
    h = rng.choice([1, 2])
    hv = h * rng.choice([1, 2])
    dk = rng.choice([16, 32] if dev == "cpu" else [16, 32, 64, 128, 256])
    dv = rng.choice([16, 32, 48] if dev == "cpu" else [16, 32, 48, 64, 128, 256])
    dk, dv = _dims(dk, dv)
    lengths = _lengths(rng, 80, scale)
    l2 = rng.random() < 0.7
    init = rng.random() < 0.5
    gen = testing.generator(rng.randint(0, 2**31))
    # g = logsigmoid(randn + shift): 1.0 decays a full chunk by ~e^-25 (the carried-state terms of the gate
    # gradient vanish), 6.0 by ~0.77 (session 25; drawn last, so a seed's other draws are what they were)
    g_shift = rng.choice([1.0, 1.0, 3.0, 6.0])
    g_shift = G_SHIFT if G_SHIFT is not None else g_shift
    t = sum(lengths)
    kscale = 1.0 if l2 else dk**-0.5
    args = {
        "q": testing.randn([t, h, dk], dtype=dtype, device=dev, generator=gen),
        "k": testing.randn([t, h, dk], dtype=dtype, device=dev, generator=gen, scale=kscale),
        "v": testing.randn([t, hv, dv], dtype=dtype, device=dev, generator=gen),
        "g": F.logsigmoid(testing.randn([t, hv], generator=gen) + g_shift).to(dev),
        "beta": torch.sigmoid(testing.randn([t, hv], generator=gen)).to(dev),
        "h0": testing.randn([len(lengths), hv, dk, dv], generator=gen, device=dev) if init else None,
    }
    if per_key:
        args["gk"] = F.logsigmoid(testing.randn([t, hv, dk], generator=gen) + 2.0).to(dev)
    cu = testing.cu_seqlens(lengths, dev)
    desc = (
        f"lengths={lengths} h={h} hv={hv} dk={dk} dv={dv} l2={l2} init={init} gk={per_key} g_shift={g_shift}"
    )

    def run_fla(a):
        # packed B=1, [1, T, H, ...]; FLA is not relied on for HV > H: q/k are repeated as the reference does
        # (value head j reads q/k head j // group; differentiable, the gradients reach our leaves). g and beta
        # stay fp32 as drawn (FLA takes fp32 g and beta; its backward casts dbeta back to beta's dtype)
        group = a["v"].shape[1] // a["q"].shape[1]
        q, k = (a[n].repeat_interleave(group, dim=1) for n in ("q", "k"))
        o, fs = _FLA(
            q[None], k[None], a["v"][None], a["g"][None], a["beta"][None], scale=a["q"].shape[-1] ** -0.5,
            initial_state=a.get("h0"), output_final_state=True, use_qk_l2norm_in_kernel=l2,
            cu_seqlens=cu.long(),
        )  # fmt: skip
        return {"o": o[0], "final_state": fs}

    def run(a):
        if PEER == "fla" and not per_key:
            return run_fla(a)
        o, fs = jagattn.gated_delta_rule(
            a["q"], a["k"], a["v"], a["g"], a["beta"], cu_seqlens=cu, initial_state=a.get("h0"),
            output_final_state=True, use_qk_l2norm=l2, gk=a.get("gk"), backend="triton",
        )  # fmt: skip
        return {"o": o, "final_state": fs}

    def ref(a, cdt):
        o, fs = gated_delta_reference(
            a["q"], a["k"], a["v"], a["g"], a["beta"], cu, initial_state=a.get("h0"),
            use_qk_l2norm=l2, gk=a.get("gk"), compute_dtype=cdt,
        )  # fmt: skip
        return {"o": o, "final_state": fs}

    # fp32 with gradients trains on the token loop (gated_delta.backends.FP32_TRAIN = "recurrent", the default since
    # session 53): every gradient checked; with it off (--set ...FP32_TRAIN=reference) the Triton backend refuses fp32
    # with gradients (not_supported_reasons), so forward only
    from jagattn.gated_delta import backends as gd_backends

    fp32_grads = dtype != torch.float32 or gd_backends.FP32_TRAIN == "recurrent"
    grads = ("q", "k", "v", "g", "beta", "h0", "gk") if fp32_grads else ()
    return desc, args, grads, run, ref


OPS = {
    "attention": case_attention,
    "hstu": case_hstu,
    "gated_delta": case_gated_delta,
    "gated_delta_gk": lambda rng, dev, dt, sc: case_gated_delta(rng, dev, dt, sc, per_key=True),
}
DTYPES = {"attention": (torch.float16, torch.float32), "hstu": (torch.float16,), "gated_delta": (torch.float16, torch.float32),
          "gated_delta_gk": (torch.float16, torch.float32)}  # fmt: skip


TRACEBACK = False  # --seed (a reproducer): print the full traceback of an exception


def run_case(op: str, seed: int, dev: str, scale: int) -> str | None:
    """None when every output passes, else the failure message."""
    rng = random.Random(f"{op}-{seed}")
    dtype = rng.choice(DTYPES[op] if dev == "cpu" else (torch.bfloat16, torch.float16))
    dtype = DTYPE if DTYPE is not None else dtype
    desc, args, grads, run, ref = OPS[op](rng, dev, dtype, scale)
    try:
        got = _outputs_and_grads(run, args, grads, seed)
        wdt = {k: v.dtype for k, v in got.items()} if ROUNDED_GRADS else None
        gold_args = {
            k: (v.double() if v is not None and v.dtype.is_floating_point else v) for k, v in args.items()
        }
        gold = _outputs_and_grads(lambda a: ref(a, torch.float64), gold_args, grads, seed, wdt)
        cdt = dtype if dtype != torch.float32 else None
        low = _outputs_and_grads(lambda a: ref(a, cdt), args, grads, seed, wdt)
        for name in gold:
            testing.assert_finite_where(name, got[name])
            testing.check_close(name, got[name], gold[name], low[name])
    except Exception as exc:  # noqa: BLE001 (a fuzz reports every failure kind)
        if TRACEBACK and not isinstance(exc, AssertionError):
            traceback.print_exc()
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        if not isinstance(exc, AssertionError):
            first = f"{type(exc).__name__}: {first} | {traceback.format_exc().splitlines()[-3].strip()}"
        elif dtype != torch.float32:
            first += _fp32_reference_verdict(ref, args, grads, seed, gold, low, wdt)
        return f"{dtype} {desc}: {first}"
    return None


# how a failing case's message says that the fp32 reference fails the rule too (the rule's noise on that case)
NOISE_TAG = "[the fp32 reference fails too"


def _finish(ops, fails: dict, noise: dict, runs: dict, t0: float) -> None:
    """The summary line (failures per op, those with the fp32 reference failing too counted apart); exit 1 on any."""
    print(
        "fuzz:",
        ", ".join(
            f"{op} {fails[op]}/{runs[op]} failed"
            + (f" ({noise[op]} with the fp32 reference failing too)" if noise[op] else "")
            for op in ops
        ),
        f"({time.time() - t0:.0f} s)",
    )
    sys.exit(1 if any(fails.values()) else 0)


def _fp32_reference_verdict(ref, args, grads, seed, gold, low, wdt) -> str:
    """For a failing half-precision case: does the reference itself, computed in fp32 on the same inputs
    and rounded to the input dtype at the end (what the fp32 route of tiny batches gives), pass the rule?
    On batches of a few tokens it may not: the output gradient reaches the op rounded to the input dtype
    while the gold's is exact, and the input-dtype reference run can land nearer the gold by chance
    (session 15). Such a failure is the rule's noise on that case, not an error of the backend."""
    try:
        exact = _outputs_and_grads(lambda a: ref(a, None), args, grads, seed, wdt)
        for name in gold:
            testing.check_close(name, exact[name], gold[name], low[name])
    except AssertionError as exc:
        return f" {NOISE_TAG}: {str(exc).split(':')[0]}]"
    return " [the fp32 reference passes]"


def _fatal(msg: str) -> bool:
    """A CUDA error that leaves the context unusable (every later case would fail with it)."""
    return "illegal memory access" in msg or "unspecified launch failure" in msg or "AcceleratorError" in msg


def _apply_sets(sets: list[str]) -> None:
    """``--set pkg.module.ATTR=value``: override a module constant (a launch knob) for an experiment."""
    import ast
    import importlib

    for item in sets:
        path, _, value = item.partition("=")
        mod_name, _, attr = path.rpartition(".")
        mod = importlib.import_module(mod_name)
        if not hasattr(mod, attr):
            raise SystemExit(f"--set {item}: {mod_name} has no attribute {attr}")
        try:
            parsed = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            parsed = value  # a bare word: a string choice
        setattr(mod, attr, parsed)


def _isolated(args, ops: list[str], seeds: range) -> None:
    """Every op in child processes; a child that meets a fatal CUDA error reports it and exits 3, and the
    next child resumes after that seed (a dead CUDA context must not fail every later case)."""
    import subprocess

    fails = {op: 0 for op in ops}
    noise = {op: 0 for op in ops}  # failures where the fp32 reference fails the rule too
    runs = {op: 0 for op in ops}
    t0 = time.time()
    for op in ops:
        start = seeds.start
        while start < seeds.stop and time.time() - t0 < args.time_budget:
            cmd = [sys.executable, __file__, "--op", op, "--first-seed", str(start), "--cases",
                   str(seeds.stop - start), "--device", args.device, "--scale", str(args.scale),
                   "--time-budget", str(args.time_budget - (time.time() - t0)), "--child"]  # fmt: skip
            if args.dims:
                cmd += ["--dims", args.dims]
            if args.dtype:
                cmd += ["--dtype", args.dtype]
            if args.cap_len is not None:
                cmd += ["--cap-len", str(args.cap_len)]
            if args.g_shift is not None:
                cmd += ["--g-shift", str(args.g_shift)]
            if args.rounded_grads:
                cmd += ["--rounded-grads"]
            if args.peer != "jagattn":
                cmd += ["--peer", args.peer]
            for item in args.set:
                cmd += ["--set", item]
            proc = subprocess.run(cmd, capture_output=True, text=True)
            last = None
            for line in proc.stdout.splitlines():
                if line.startswith("CASE "):
                    _, _, seed, status = line.split()
                    runs[op] += 1
                    last = int(seed)
                    fails[op] += status != "ok"
                elif line.startswith("FAIL"):
                    noise[op] += NOISE_TAG in line
                    print(line, flush=True)
            if proc.returncode not in (0, 1, 3):
                print(
                    f"child for --op {op} from seed {start} died (exit {proc.returncode}):",
                    proc.stderr[-2000:],
                )
                fails[op] += 1
                runs[op] += 1
                last = start if last is None else last + 1
            if proc.returncode != 3 and proc.returncode in (0, 1):
                break
            start = (last if last is not None else start) + 1
    _finish(ops, fails, noise, runs, t0)


def main() -> None:
    global DIMS, DTYPE, TRACEBACK, PEER, _FLA, CAP_LEN, ROUNDED_GRADS, G_SHIFT
    ap = argparse.ArgumentParser()
    ap.add_argument("--op", choices=list(OPS), action="append")
    ap.add_argument("--cases", type=int, default=50, help="cases per op")
    ap.add_argument("--seed", type=int, help="run only this seed (reproducer)")
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--scale", type=int, default=1, help="multiplies the random lengths (GPU)")
    ap.add_argument("--time-budget", type=float, default=float("inf"), help="seconds, then stop")
    ap.add_argument("--dims", help="A,B: both head dims of every case (instead of the random draw)")
    ap.add_argument(
        "--dtype", choices=("bf16", "fp16", "fp32"), help="every case in this dtype (bf16: GPU only)"
    )
    ap.add_argument("--set", action="append", default=[], help="pkg.module.ATTR=value (experiments)")
    ap.add_argument("--cap-len", type=int, help="cap every drawn sequence length at this (tiny batches)")
    ap.add_argument(
        "--rounded-grads", action="store_true", help="output gradients in the outputs' dtypes, gold too"
    )
    ap.add_argument("--peer", choices=("jagattn", "fla"), default="jagattn", help="gated_delta under test")
    ap.add_argument("--g-shift", type=float, help="gated delta: g = logsigmoid(randn + this) in every case")
    ap.add_argument("--isolate", action="store_true", help="child processes; survive fatal CUDA errors")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.dims:
        DIMS = tuple(int(x) for x in args.dims.split(","))
        if len(DIMS) != 2:
            raise SystemExit("--dims takes two head dims: A,B")
    if args.dtype:
        if args.device == "cpu" and args.dtype == "bf16":
            ap.error("--dtype bf16 is for the GPU (the CPU interpreter cannot run bf16 dots)")
        DTYPE = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[args.dtype]
    CAP_LEN = args.cap_len
    G_SHIFT = args.g_shift
    ROUNDED_GRADS = args.rounded_grads
    _apply_sets(args.set)
    TRACEBACK = args.seed is not None
    ops = args.op or list(OPS)
    if args.peer == "fla":
        if set(ops) != {"gated_delta"}:
            ap.error("--peer fla tests FLA's chunk_gated_delta_rule: give --op gated_delta and no other --op")
        PEER, _FLA = args.peer, _load_fla()
    seeds = (
        range(args.seed, args.seed + 1)
        if args.seed is not None
        else range(args.first_seed, args.first_seed + args.cases)
    )
    if args.isolate:
        _isolated(args, ops, seeds)
    t0 = time.time()
    fails: dict[str, int] = {op: 0 for op in ops}
    noise: dict[str, int] = {op: 0 for op in ops}  # failures where the fp32 reference fails the rule too
    runs: dict[str, int] = {op: 0 for op in ops}
    for seed in seeds:
        for op in ops:
            if time.time() - t0 > args.time_budget:
                break
            msg = run_case(op, seed, args.device, args.scale)
            runs[op] += 1
            if args.child:
                print(f"CASE {op} {seed} {'ok' if msg is None else 'FAIL'}", flush=True)
            elif runs[op] % 50 == 0 and op == ops[-1]:
                print(
                    f"... {runs[op]} cases per op, {sum(fails.values())} failed, {time.time() - t0:.0f} s",
                    flush=True,
                )
            if msg is not None:
                fails[op] += 1
                noise[op] += NOISE_TAG in msg
                # everything that changes the case or the code under test (the seed alone does not: the
                # lengths scale with --scale; session 14 re-ran round-13 failures without it)
                repro = f" --scale {args.scale}" if args.scale != 1 else ""
                repro += f" --device {args.device}" if args.device != "cpu" else ""
                repro += f" --dims {args.dims}" if args.dims else ""
                repro += f" --dtype {args.dtype}" if args.dtype else ""
                repro += f" --cap-len {args.cap_len}" if args.cap_len is not None else ""
                repro += " --rounded-grads" if args.rounded_grads else ""
                repro += "".join(f" --set {x}" for x in args.set)
                repro += " --peer fla" if PEER == "fla" else ""
                print(f"FAIL --op {op} --seed {seed}{repro}: {msg}", flush=True)
                if args.device != "cpu" and _fatal(msg):
                    sys.exit(3)  # the CUDA context is dead: the parent (--isolate) resumes after this seed
    _finish(ops, fails, noise, runs, t0)


if __name__ == "__main__":
    main()
