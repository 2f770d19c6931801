"""Host time of each layer of an HSTU call, from the bare compiled-kernel launch up to the public API (issue #5).

The recsys row is host-bound (session 38: do_bench forward 0.338 ms against a 0.167 ms kernel on an H100). This
script times, per layer, the host time of one call on the row's real inputs: the GPU is synchronized before each call
and only the call itself is timed (``perf_counter``), so neither a queue backlog nor the kernel's duration counts.
Median of ``-n`` calls, in microseconds. Layers, innermost first:

- ``run``: ``CompiledKernel.run`` with the stream, function and metadata prepared (the driver's C launcher alone);
- ``compiled[grid]``: ``CompiledKernel.__getitem__(grid)(*args)`` (Triton's AOT-style launch: stream lookup and
  launch metadata per call);
- ``jit``: the autotuned kernel called as ``kernel[grid](*args, **constexprs)`` (Triton's autotuner and JIT
  dispatch: binding, specialization, cache key);
- ``wrap_triton``: the same through ``torch.library.wrap_triton`` (what ``fwd._launch`` does);
- ``_launch``: our launcher (its decisions, then the above);
- ``op body``: the ``hstu_fwd`` impl the eager fast path calls (allocation + ``_launch``);
- ``eager_call grad``: ``eager_call(hstu_fwd, ...)`` with inputs requiring grad (the autograd Function);
- ``backend(inputs)``, ``make_inputs``, ``public``: the backend on validated inputs, validation alone, the public
  function with ``backend="triton"``;

then the backward's pieces (``_launch_bwd`` for dK/dV, ``_launch(1, ...)`` for dQ, the ``hstu_bwd`` body) and the
whole forward + backward (public call and ``.backward``).

Usage on the GPU machine: ``PYTHONPATH=src python3 benchmarks/host_layers.py [--rows recsys] [-n 200]``
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ.setdefault("JAGATTN_AUTOTUNE", "0")

import torch  # noqa: E402

from jagattn._core import library  # noqa: E402
from jagattn.bench import cases, suites  # noqa: E402
from jagattn.hstu import api as hstu_api  # noqa: E402
from jagattn.hstu import ops  # noqa: E402
from jagattn.hstu.backends import BACKENDS  # noqa: E402
from jagattn.hstu.triton import bwd as hbwd  # noqa: E402
from jagattn.hstu.triton import fwd as hfwd  # noqa: E402


def host_us(fn, n: int) -> float:
    for _ in range(3):
        fn()
    samples = []
    for _ in range(n):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    torch.cuda.synchronize()
    return statistics.median(samples) * 1e6


def capture_launch(module, call):
    """Run ``call`` with ``module.launch`` (``_core.launch.launch`` as the module imported it) replaced by a
    recorder: the kernel, grid, arguments and the compiled kernel that Triton's own dispatch returned."""
    rec = {}
    real = module.launch

    def recorder(kernel, grid, *args, **kwargs):
        rec.update(kernel=kernel, grid=grid, args=args, kwargs=kwargs, compiled=kernel[grid](*args, **kwargs))

    module.launch = recorder
    try:
        call()
    finally:
        module.launch = real
    return rec


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", default="recsys")
    ap.add_argument("-n", type=int, default=200)
    ap.add_argument("--cprofile", action="store_true", help="only cProfile the op bodies and the public forward")
    args = ap.parse_args()
    import triton
    from triton.runtime.driver import driver

    fam = cases.HstuFamily()
    print(
        f"torch {torch.__version__}, triton {triton.__version__}, {torch.cuda.get_device_name()}", flush=True
    )
    for row in suites.select_rows(["hstu"], args.rows):
        p = fam.build(row, torch.device("cuda"), torch.bfloat16)
        leaves = p.leaves()
        q, k, v = leaves["q"], leaves["k"], leaves["v"]
        kw = fam._kwargs(p)
        mx = p.params["max_seq_len"]
        inp = hstu_api.make_inputs(q, k, v, p.cu_seqlens, mx, **kw)
        common = (
            inp.k, inp.v, inp.seq_offsets, inp.num_targets, inp.max_seq_len, inp.alpha, inp.inv_scale_len,
            inp.contextual_seq_len, inp.max_attn_len, inp.min_full_attn_seq_len,
        )  # fmt: skip
        qd, kd, vd = q.detach(), k.detach(), v.detach()
        common_d = (kd, vd, *common[2:])
        out = torch.empty(q.shape[0], q.shape[1], v.shape[2], dtype=q.dtype, device=q.device)
        do = torch.randn_like(out)

        def launch_fwd():
            hfwd._launch(0, qd, kd, vd, None, out, *common_d[2:], None)

        rec = capture_launch(hfwd, launch_fwd)
        kern, grid, a, kwa, compiled = rec["kernel"], rec["grid"], rec["args"], rec["kwargs"], rec["compiled"]
        cfg = getattr(kern, "best_config", None)
        meta = dict(kwa)
        if cfg is not None:
            meta.update(cfg.all_kwargs())
        jit = kern
        while not isinstance(jit, triton.runtime.jit.JITFunction):
            jit = jit.fn
        names = jit.arg_names
        full = list(a) + [meta[n] for n in names[len(a) :]]
        g = grid(meta) if callable(grid) else grid
        g3 = tuple(g) + (1,) * (3 - len(g))
        dev = driver.active.get_current_device()
        stream = driver.active.get_current_stream(dev)
        compiled[g3](*full)  # loads the handles
        runner = compiled[g3]
        from triton import knobs

        def raw_run():
            compiled.run(
                g3[0], g3[1], g3[2], stream, compiled.function, compiled.packed_metadata, None,
                knobs.runtime.launch_enter_hook, knobs.runtime.launch_exit_hook, *full,
            )  # fmt: skip

        impl, function = library._FAST[id(ops.hstu_fwd)]
        backend = BACKENDS[0]

        def fwd_public():
            return fam.call(p, leaves, "triton")

        def fwdbwd_public():
            for t in (q, k, v):
                t.grad = None
            fam.call(p, leaves, "triton").backward(do)

        bwd_args = (do, qd, kd, vd, *common_d[2:], False)
        layers = {
            "run (C launcher)": raw_run,
            "compiled[grid](*args)": lambda: runner(*full),
            "jit kernel[grid]": lambda: kern[grid](*a, **kwa),
            "wrap_triton(kernel)[grid]": lambda: torch.library.wrap_triton(kern)[grid](*a, **kwa),
            "launch() (fast path)": lambda: hfwd.launch(kern, grid, *a, **kwa),
            "fwd._launch": launch_fwd,
            "op body (impl)": lambda: impl(qd, *common_d, False),
            "eager_call no grad": lambda: library.eager_call(ops.hstu_fwd, qd, *common_d, False),
            "eager_call grad (Function)": lambda: library.eager_call(ops.hstu_fwd, q, *common, False),
            "backend(inputs) grad": lambda: backend(inp),
            "make_inputs": lambda: hstu_api.make_inputs(q, k, v, p.cu_seqlens, mx, **kw),
            "public fwd grad": fwd_public,
            "bwd: _launch_bwd (dK/dV)": lambda: hbwd._launch_bwd(
                do, qd, kd, vd, None, torch.empty_like(kd), torch.empty_like(vd), *common_d[2:]
            ),
            "bwd: _launch(1) (dQ)": lambda: hfwd._launch(
                1, qd, kd, vd, do, torch.empty_like(qd), *common_d[2:], None
            ),
            "bwd: hstu_bwd body": lambda: library._FAST[id(ops.hstu_bwd)][0](*bwd_args),
            "public fwd+bwd": fwdbwd_public,
        }
        if args.cprofile:
            for name in ("op body (impl)", "bwd: hstu_bwd body", "public fwd grad"):
                cprofile(name, layers[name], args.n)
            continue
        layers.update(backward_pieces(qd, kd, vd, do, common_d, args.n))
        print(
            f"row {row.name}: T={q.shape[0]} B={len(p.lengths)} grid={g3} kernel={compiled.name}", flush=True
        )
        for name, fn in layers.items():
            print(f"  {name:34s} {host_us(fn, args.n):8.1f} us", flush=True)
        device_thread_split(fwdbwd_public, args.n)
        backward_only(fwd_public, do, (q, k, v), args.n)
        engine_cost(args.n)


def cprofile(name, fn, n):
    import cProfile
    import io
    import pstats

    with torch.no_grad() if "body" in name else torch.enable_grad():
        for _ in range(5):
            fn()
        torch.cuda.synchronize()
        pr = cProfile.Profile()
        pr.enable()
        for _ in range(n):
            fn()
        pr.disable()
        torch.cuda.synchronize()
    s = io.StringIO()
    pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(28)
    print(f"=== cProfile {name}, {n} calls\n{s.getvalue()}", flush=True)


def backward_pieces(qd, kd, vd, do, common_d, n):
    """The backward's launches as real calls run them (``wrap_triton`` off), and the Gluon dQ launch's pieces."""
    from torch._library.triton import set_wrap_triton_enabled

    from jagattn._core import gluon as _g
    from jagattn.hstu.triton import bwd_gluon as hgl

    dk, dv, dq = torch.empty_like(kd), torch.empty_like(vd), torch.empty_like(qd)

    def off(fn):
        def run():
            with set_wrap_triton_enabled(False):
                fn()

        return run

    rec = capture_launch(hgl, lambda: hfwd._launch(1, qd, kd, vd, do, dq, *common_d[2:], None))
    real = hgl._hstu_bwd_dq_gluon_kernel
    out = {
        "torch.empty_like x3": lambda: (torch.empty_like(qd), torch.empty_like(kd), torch.empty_like(vd)),
        "bwd: _launch_bwd wrap off": off(
            lambda: hbwd._launch_bwd(do, qd, kd, vd, None, dk, dv, *common_d[2:])
        ),
        "bwd: _launch(1) dQ wrap off": off(lambda: hfwd._launch(1, qd, kd, vd, do, dq, *common_d[2:], None)),
        "dq: use_gluon_dq": lambda: hgl.use_gluon_dq(qd, kd, vd, do, False),
        "dq: host_desc x4": lambda: [_g.host_desc(t, 64, 128) for t in (qd, kd, vd, do)],
    }
    if rec:
        grid, a, kw, compiled = rec["grid"], rec["args"], rec["kwargs"], rec["compiled"]
        jit = real
        names = jit.arg_names
        full = list(a) + [kw[nm] for nm in names[len(a) :] if nm in kw]
        g3 = tuple(grid) + (1,) * (3 - len(grid))
        out["dq: gluon kernel[grid] (descs built)"] = lambda: real[grid](*a, **kw)
        out["dq: launch() (descs built)"] = lambda: hgl.launch(real, grid, *a, **kw)
        if len(full) == len(names):
            runner = compiled[g3]
            out["dq: gluon compiled[grid]"] = lambda: runner(*full)
        else:
            print(f"  (gluon: {len(full)} of {len(names)} arguments matched; compiled launch not timed)")
    return out


def device_thread_split(fwdbwd, n):
    """Host time of forward + backward, of its ``.backward()``, of the backward node and of the ``hstu_bwd`` body in
    autograd's device thread (the node and the body timed by wrappers around them)."""
    fn_cls = library._FAST[id(ops.hstu_fwd)][1]
    orig_bwd = fn_cls.backward
    body, bfn = library._FAST[id(ops.hstu_bwd)]
    node_t, body_t = [], []

    def timed_node(ctx, *g):
        t0 = time.perf_counter()
        r = orig_bwd(ctx, *g)
        node_t.append(time.perf_counter() - t0)
        return r

    def timed_body(*a):
        t0 = time.perf_counter()
        r = body(*a)
        body_t.append(time.perf_counter() - t0)
        return r

    fn_cls.backward = staticmethod(timed_node)
    library._FAST[id(ops.hstu_bwd)] = (timed_body, bfn)
    try:
        tot = host_us(fwdbwd, n)
    finally:
        fn_cls.backward = orig_bwd
        library._FAST[id(ops.hstu_bwd)] = (body, bfn)
    med = lambda xs: statistics.median(xs[3:]) * 1e6  # noqa: E731
    print(
        f"  fwd+bwd {tot:.1f} us; in autograd's thread: backward node {med(node_t):.1f} us, hstu_bwd body "
        f"{med(body_t):.1f} us",
        flush=True,
    )


def backward_only(fwd, do, leaves, n):
    """Host time of ``.backward()`` alone (the forward run before the timer), as is and with the ``hstu_bwd`` body or
    the whole backward node replaced by a stub that returns preallocated gradients (no launch)."""
    grads = tuple(torch.zeros_like(t) for t in leaves)

    def timed(label):
        samples = []
        for i in range(n + 3):
            for t in leaves:
                t.grad = None
            o = fwd()
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            o.backward(do)
            if i >= 3:
                samples.append(time.perf_counter() - t0)
        torch.cuda.synchronize()
        print(f"  backward() only, {label:28s} {statistics.median(samples) * 1e6:8.1f} us", flush=True)

    timed("as is")
    body, bfn = library._FAST[id(ops.hstu_bwd)]
    library._FAST[id(ops.hstu_bwd)] = (lambda *a: grads, bfn)
    try:
        timed("hstu_bwd body stubbed")
    finally:
        library._FAST[id(ops.hstu_bwd)] = (body, bfn)
    fn_cls = library._FAST[id(ops.hstu_fwd)][1]
    orig = fn_cls.backward
    fn_cls.backward = staticmethod(lambda ctx, g: (*grads, *([None] * 9)))
    try:
        timed("backward node stubbed")
    finally:
        fn_cls.backward = orig


def engine_cost(n):
    """A trivial autograd.Function's forward + backward on a CUDA tensor (the engine and its thread alone)."""

    class Id(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.view_as(x)

        @staticmethod
        def backward(ctx, g):
            return g

    x = torch.ones(4, device="cuda", requires_grad=True)
    g = torch.ones(4, device="cuda")

    def run():
        x.grad = None
        Id.apply(x).backward(g)

    print(f"  trivial Function fwd+bwd {host_us(run, n):.1f} us", flush=True)


if __name__ == "__main__":
    main()
