"""Session 26 round 9 (issue #4): host (CPU) time of one attention forward + backward through the public op, Gluon
dK/dV (default) vs the Triton kernel (``--triton``, sets JAGATTN_ATTN_GLUON=0 before import), on suite rows: 50 calls
submitted without a sync (host ms per call) and the same with a sync after all of them (wall ms per call). When the
two are equal, the call is bound by the host, not the GPU."""

import os
import sys
import time

if "--triton" in sys.argv:
    os.environ["JAGATTN_ATTN_GLUON"] = "0"

import torch  # noqa: E402

from jagattn.bench import suites  # noqa: E402
from jagattn.bench.cases import FAMILIES  # noqa: E402

rows = {r.name: r for r in suites.all_rows() if r.family == "attention"}
for name in sys.argv[1].split(","):
    p = FAMILIES["attention"].build(rows[name], torch.device("cuda"), torch.bfloat16)
    leaves = p.leaves()
    do = None
    for _ in range(3):
        o = FAMILIES["attention"].call(p, leaves, "triton")
        do = torch.randn_like(o) if do is None else do
        o.backward(do)
    torch.cuda.synchronize()
    n = 50
    t0 = time.perf_counter()
    for _ in range(n):
        for t in leaves.values():
            t.grad = None
        FAMILIES["attention"].call(p, leaves, "triton").backward(do)
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    t2 = time.perf_counter()
    tag = "triton" if "--triton" in sys.argv else "gluon"
    print(
        f"{name} {tag}: host {1e3 * (t1 - t0) / n:.3f} ms/call, wall {1e3 * (t2 - t0) / n:.3f} ms/call",
        flush=True,
    )
