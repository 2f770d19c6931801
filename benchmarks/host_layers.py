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


def capture_launch(call):
    """Run ``call`` with ``torch.library.wrap_triton`` replaced by a recorder: the kernel, grid, arguments and the
    compiled kernel that Triton's dispatch returned."""
    rec = {}
    real = torch.library.wrap_triton

    class Recorder:
        def __init__(self, kernel):
            self.kernel = kernel

        def __getitem__(self, grid):
            def run(*args, **kwargs):
                ret = self.kernel[grid](*args, **kwargs)
                rec.update(kernel=self.kernel, grid=grid, args=args, kwargs=kwargs, compiled=ret)
                return ret

            return run

    torch.library.wrap_triton = Recorder
    try:
        call()
    finally:
        torch.library.wrap_triton = real
    return rec


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", default="recsys")
    ap.add_argument("-n", type=int, default=200)
    args = ap.parse_args()
    import triton
    from triton.runtime.driver import driver

    fam = cases.HstuFamily()
    print(f"torch {torch.__version__}, triton {triton.__version__}, {torch.cuda.get_device_name()}", flush=True)
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

        rec = capture_launch(launch_fwd)
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
            "bwd: _launch(1) (dQ)": lambda: hfwd._launch(1, qd, kd, vd, do, torch.empty_like(qd), *common_d[2:], None),
            "bwd: hstu_bwd body": lambda: library._FAST[id(ops.hstu_bwd)][0](*bwd_args),
            "public fwd+bwd": fwdbwd_public,
        }
        print(f"row {row.name}: T={q.shape[0]} B={len(p.lengths)} grid={g3} kernel={compiled.name}", flush=True)
        for name, fn in layers.items():
            print(f"  {name:30s} {host_us(fn, args.n):8.1f} us", flush=True)


if __name__ == "__main__":
    main()
