"""Host cost of the attention forward + backward and of the Gluon dK/dV launch (issues #4 and #5; session 27 round 1
measured one forward + backward call at 1.37 ms of host time with the Gluon dK/dV kernel against 1.08 ms with the
Triton one).

On a tiny batch (the GPU never waits for work, the host does), microseconds per call of N calls without a sync:

- the public forward (inputs requiring grad) and forward + backward, and how much of the latter runs inside the
  backward node (autograd's device thread); a trivial ``autograd.Function`` for the engine's own cost;
- ``eager_call`` of the backward op, and the backend's ``attention_bwd`` (both kernels) with the Triton dK/dV kernel
  and with the Gluon one, as real calls run it (``wrap_triton`` off);
- the pieces of the Gluon launch: the shared-memory layout (``get_default_for``), four ``TensorDescriptor`` objects,
  the kernel call with descriptors built beforehand, ``launch_dkdv_gluon``; the autotuned dQ kernel's launch;
- unless ``--quick``: cProfiles of the backward node in autograd's thread, of forward + backward and of the backward
  op from the main thread.

Usage on the GPU machine: ``PYTHONPATH=src python3 benchmarks/gluon_launch_cost.py [-n 2000] [--quick]``.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import time

os.environ.setdefault("JAGATTN_AUTOTUNE", "0")

import torch  # noqa: E402
from torch._library.triton import set_wrap_triton_enabled  # noqa: E402

from jagattn._core import gluon as _g  # noqa: E402
from jagattn.attention.triton import bwd as abwd  # noqa: E402
from jagattn.attention.triton import bwd_gluon as agl  # noqa: E402


def per_call_us(fn, n: int) -> float:
    for _ in range(20):
        fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    return 1e6 * (t1 - t0) / n


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=2000)
    ap.add_argument("--quick", action="store_true", help="the per-call table only, no cProfile listings")
    args = ap.parse_args()
    dev = torch.device("cuda")
    lengths = [64, 64, 64, 64]
    t = sum(lengths)
    hq, hkv, d = 16, 16, 128
    cu = torch.tensor([0, 64, 128, 192, 256], dtype=torch.int32, device=dev)
    q, k, v = (torch.randn(t, h, d, device=dev, dtype=torch.bfloat16) for h in (hq, hkv, hkv))
    o = torch.randn_like(q)
    do = torch.randn_like(q)
    lse = torch.randn(hq, t, device=dev, dtype=torch.float32)
    bargs = (do, q, k, v, o, lse, None, cu, cu, 64, 64, -1, 0, d**-0.5, 0.0, False)

    def bwd():
        with set_wrap_triton_enabled(False):  # as triton_op's body and the eager fast path run it
            abwd.attention_bwd(*bargs)

    import jagattn
    from jagattn._core.library import eager_call
    from jagattn.attention import ops as aops

    qg, kg, vg = (x.clone().requires_grad_() for x in (q, k, v))

    def public_fwd():
        return jagattn.attention(qg, kg, vg, cu, cu, 64, 64, causal=True, backend="triton")

    def public_fwdbwd():
        for x in (qg, kg, vg):
            x.grad = None
        public_fwd().backward(do)

    def op_bwd():
        eager_call(aops.attention_bwd, *bargs)

    assert agl.use_gluon(q, k, v, do, 0.0, False), "the Gluon path must apply on this device"
    res = {}
    res["public fwd (inputs require grad)"] = per_call_us(public_fwd, args.n)
    res["public fwd + bwd"] = per_call_us(public_fwdbwd, args.n)
    res["eager_call(ops.attention_bwd)"] = per_call_us(op_bwd, args.n)

    # host time spent inside our backward node during public fwd + bwd (the rest of the backward is the engine)
    inside = [0.0, 0]
    real_eager_call = aops.eager_call

    def timed_eager_call(*a):
        t0 = time.perf_counter()
        out = real_eager_call(*a)
        inside[0] += time.perf_counter() - t0
        inside[1] += 1
        return out

    aops.eager_call = timed_eager_call
    total = per_call_us(public_fwdbwd, args.n)
    aops.eager_call = real_eager_call
    res["public fwd + bwd (timed again)"] = total
    res["  of which inside the backward's eager_call"] = 1e6 * inside[0] / inside[1]

    # the backward node's own host time as the autograd engine's thread sees it, by function
    bprof = cProfile.Profile()

    def profiled_eager_call(*a):
        bprof.enable()
        try:
            return real_eager_call(*a)
        finally:
            bprof.disable()

    aops.eager_call = profiled_eager_call
    for _ in range(500):
        public_fwdbwd()
    torch.cuda.synchronize()
    aops.eager_call = real_eager_call
    sio = io.StringIO()
    pstats.Stats(bprof, stream=sio).sort_stats("tottime").print_stats(30)
    backward_profile = sio.getvalue()

    class Trivial(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a, b, c):
            return torch.empty_like(a)

        @staticmethod
        def backward(ctx, g):
            return torch.empty_like(qg), torch.empty_like(kg), torch.empty_like(vg)

    def trivial_fwdbwd():
        for x in (qg, kg, vg):
            x.grad = None
        Trivial.apply(qg, kg, vg).backward(do)

    res["trivial Function fwd + bwd (engine cost)"] = per_call_us(trivial_fwdbwd, args.n)
    agl.GLUON_SWITCH = "0"
    res["attention_bwd, Triton dK/dV"] = per_call_us(bwd, args.n)
    agl.GLUON_SWITCH = "auto"
    res["attention_bwd, Gluon dK/dV"] = per_call_us(bwd, args.n)
    res["layout get_default_for x1"] = per_call_us(
        lambda: _g.gl.NVMMASharedLayout.get_default_for([64, 128], _g.gl.bfloat16), args.n
    )
    res["host_desc x4"] = per_call_us(lambda: [_g.host_desc(x, 64, 128) for x in (q, k, v, do)], args.n)
    res["use_gluon"] = per_call_us(lambda: agl.use_gluon(q, k, v, do, 0.0, False), args.n)

    delta = torch.zeros(hq, abwd.row_stats_rows(t, 4), device=dev)
    lse2 = torch.zeros_like(delta)
    dk, dv = torch.empty_like(k), torch.empty_like(v)
    descs = [_g.host_desc(x, 64, 128) for x in (q, k, v, do)]
    kern = agl._attention_bwd_dkdv_gluon_kernel
    slots = abwd.num_slots(t, 4, agl.BLOCK_N)

    def launch_prebuilt():
        kern[(slots, hkv)](
            *descs, lse2, delta, dk, dv, cu, cu,
            dk.stride(0), dk.stride(1), dv.stride(0), dv.stride(1), delta.stride(0),
            q.stride(1), do.stride(1), k.stride(1), v.stride(1),
            4, 1, -1, 0, 0.1, 0.1,
            HEAD_D=d, HEAD_DV=d, HAS_LEFT=False, HAS_RIGHT=True, HEAD_MAJOR=False, ROW_PAD=64,
            BLOCK_M=agl.BLOCK_M, BLOCK_N=agl.BLOCK_N, STAGES=agl.STAGES, num_warps=agl.WARPS,
        )  # fmt: skip

    res["Gluon kernel call, descriptors prebuilt"] = per_call_us(launch_prebuilt, args.n)

    def dq_launch():
        with set_wrap_triton_enabled(False):
            abwd._attention_bwd_dq_kernel[(abwd.num_slots(t, 4, 128), hq)](
                q, k, v, o, do, lse, delta, delta, lse2, dk, cu, cu,
                q.stride(0), q.stride(1), k.stride(0), k.stride(1), v.stride(0), v.stride(1),
                o.stride(0), o.stride(1), do.stride(0), do.stride(1), lse.stride(0), delta.stride(0),
                delta.stride(0), dk.stride(0), dk.stride(1),
                4, 1, -1, 0, 0.1, 0.1, 1.0, 1.0, 0,
                d, d, d, d, False, True, False, False, "tf32", 64, abwd.dq_use_tma(k, v),
            )  # fmt: skip

    res["dQ kernel call (autotuner, one config)"] = per_call_us(dq_launch, args.n)
    res["launch_dkdv_gluon (descriptors + call)"] = per_call_us(
        lambda: agl.launch_dkdv_gluon(
            q, k, v, do, lse2, delta, dk, dv, cu, cu, 4, 1, False, True, -1, 0, 0.1, 0.1, False, 64
        ),
        args.n,
    )
    for name, us in res.items():
        print(f"{name:48s} {us:8.1f} us/call", flush=True)
    if args.quick:
        return
    print(
        f"== cProfile of the backward node inside 500 public fwd + bwd calls (autograd's thread)\n{backward_profile}"
    )
    for name, fn in (
        ("public fwd + bwd", public_fwdbwd),
        ("eager_call(ops.attention_bwd), main thread", op_bwd),
    ):
        pr = cProfile.Profile()
        pr.enable()
        for _ in range(500):
            fn()
        pr.disable()
        torch.cuda.synchronize()
        s = io.StringIO()
        pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(25)
        print(f"== cProfile of 500 calls: {name}\n{s.getvalue()}", flush=True)


if __name__ == "__main__":
    main()
