"""Session 27 round 7 (issues #4, #5): the backward's host time in autograd's device thread.

Round 5 found every function of the attention backward ~2x slower (own time, cProfile) when autograd's device thread
runs it than when the main thread calls the same op; round 6 found the HSTU backward with the Gluon dK/dV kernel
~0.2-0.3 ms slower per call on the host than with the Triton one. This probe: (1) whether Python state set in the
device thread survives between backward calls (a ContextVar such as Triton's scratch allocator, a threading.local);
(2) cProfiles, by own time, of the HSTU backward node on the recsys row with the Gluon kernel off and on, inside
forward + backward calls (the device thread)."""

import contextvars
import cProfile
import io
import pstats
import sys
import threading
import time

import torch

from jagattn.bench import cases, suites
from jagattn.hstu import ops as hops
from jagattn.hstu.triton import bwd_gluon

VAR = contextvars.ContextVar("probe", default=None)
LOCAL = threading.local()
seen = {"calls": 0, "var_lost": 0, "local_lost": 0, "threads": set()}


class Probe(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a):
        return a.view_as(a)

    @staticmethod
    def backward(ctx, g):
        seen["calls"] += 1
        seen["threads"].add(threading.get_ident())
        if VAR.get() is None:
            seen["var_lost"] += 1
            VAR.set(1)
        if getattr(LOCAL, "x", None) is None:
            seen["local_lost"] += 1
            LOCAL.x = 1
        return g


x = torch.randn(8, device="cuda", requires_grad=True)
for _ in range(20):
    Probe.apply(x).sum().backward()
torch.cuda.synchronize()
print(
    f"device-thread state: {seen['calls']} backward calls on {len(seen['threads'])} thread(s); ContextVar unset at "
    f"entry {seen['var_lost']} times, threading.local unset {seen['local_lost']} times",
    flush=True,
)

fam = cases.FAMILIES["hstu"]
(row,) = suites.select_rows(["hstu"], sys.argv[1] if len(sys.argv) > 1 else "recsys")
p = fam.build(row, torch.device("cuda"), torch.bfloat16)
leaves = p.leaves()
grads = [leaves[n] for n in p.grad_names]
do = torch.randn_like(fam.call(p, leaves, "triton"))
real = hops.eager_call
for switch in ("0", "1", "0", "1"):
    bwd_gluon.GLUON_SWITCH = switch
    prof = cProfile.Profile()
    spent = [0.0]

    def wrapped(*a, prof=prof, spent=spent):
        t0 = time.perf_counter()
        prof.enable()
        try:
            return real(*a)
        finally:
            prof.disable()
            spent[0] += time.perf_counter() - t0

    for _ in range(5):
        fam.call(p, leaves, "triton").backward(do)
    torch.cuda.synchronize()
    hops.eager_call = wrapped
    n = 200
    for _ in range(n):
        for g in grads:
            g.grad = None
        fam.call(p, leaves, "triton").backward(do)
    torch.cuda.synchronize()
    hops.eager_call = real
    sio = io.StringIO()
    pstats.Stats(prof, stream=sio).sort_stats("tottime").print_stats(22)
    print(
        f"== {row.name}, JAGATTN_HSTU_GLUON={switch}: backward node {1e3 * spent[0] / n:.3f} ms/call (profiled)\n"
        f"{sio.getvalue()}",
        flush=True,
    )
