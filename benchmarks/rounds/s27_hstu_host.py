"""Session 27 round 6 (issue #5): why session 26's HSTU backward with the Gluon dK/dV kernel read 0.65x on the recsys
row (host-bound) when its kernel was faster: per row, Gluon (JAGATTN_HSTU_GLUON=1) and the Triton dK/dV kernel
alternated in one process, each as host ms per forward + backward call (50 calls, no sync), wall ms (sync after
them), do_bench forward and forward + backward medians, as the suite times them."""

import sys
import time

import torch
from triton.testing import do_bench

from jagattn.bench import cases, suites
from jagattn.hstu.triton import bwd_gluon

fam = cases.FAMILIES["hstu"]
for row in suites.select_rows(["hstu"], sys.argv[1]):
    p = fam.build(row, torch.device("cuda"), torch.bfloat16)
    leaves = p.leaves()
    grads = [leaves[n] for n in p.grad_names]
    do = torch.randn_like(fam.call(p, leaves, "triton"))

    def fwd(p=p, leaves=leaves):
        return fam.call(p, leaves, "triton")

    def fwdbwd(p=p, leaves=leaves, do=do):
        fam.call(p, leaves, "triton").backward(do)

    for rep in range(2):
        for switch in ("0", "1"):
            bwd_gluon.GLUON_SWITCH = switch
            for _ in range(3):
                fwdbwd()
            torch.cuda.synchronize()
            n = 50
            t0 = time.perf_counter()
            for _ in range(n):
                for g in grads:
                    g.grad = None
                fwdbwd()
            t1 = time.perf_counter()
            torch.cuda.synchronize()
            t2 = time.perf_counter()
            f = do_bench(fwd, warmup=25, rep=100, return_mode="median")
            fb = do_bench(fwdbwd, warmup=25, rep=100, grad_to_none=grads, return_mode="median")
            tag = "gluon " if switch == "1" else "triton"
            print(
                f"{row.name} {tag} pass {rep}: host {1e3 * (t1 - t0) / n:.3f} ms/call, wall {1e3 * (t2 - t0) / n:.3f}"
                f" ms/call; do_bench fwd {f:.3f} fwdbwd {fb:.3f} bwd {fb - f:.3f} ms",
                flush=True,
            )
