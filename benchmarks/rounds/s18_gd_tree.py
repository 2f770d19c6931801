"""Session 18: per-kernel device times (torch profiler, mean of 10 calls) of the gated delta backward on suite rows
through the Triton backend, and o + gradients of the first row saved for a bitwise comparison between two source
trees (``PYTHONPATH=<tree>/src``). Usage: ``s18_gd_tree.py <rows> <out.json> <grads.pt>``; ``--compare a.pt b.pt``."""

import json
import os
import runpy
import sys

import torch

if sys.argv[1] == "--compare":  # the same saved-file comparison as session 17's script
    runpy.run_path(
        os.path.join(os.path.dirname(os.path.abspath(__file__)), "s17_save_grads.py"), run_name="__main__"
    )

from jagattn.bench import impls, suites  # noqa: E402
from jagattn.bench.cases import FAMILIES  # noqa: E402

fam = FAMILIES["gated_delta"]
(impl,), _ = impls.resolve("gated_delta", "triton")
rows = {r.name: r for r in suites.all_rows() if r.family == "gated_delta"}
out = {}
for i, name in enumerate(sys.argv[1].split(",")):
    p = fam.build(rows[name], torch.device("cuda"), torch.bfloat16)
    fn = impl.prepare(p).fn
    leaves = p.leaves()
    inputs = [t for t in leaves.values() if t.requires_grad]
    o = fn(leaves)
    o = o[0] if isinstance(o, tuple) else o
    do = torch.randn(o.shape, generator=torch.Generator().manual_seed(7)).to(o)
    for _ in range(3):
        grads = torch.autograd.grad(o, inputs, do, retain_graph=True)
    if i == 0:
        torch.save({"o": o.detach().cpu(), **{f"g{j}": g.cpu() for j, g in enumerate(grads)}}, sys.argv[3])
    torch.cuda.synchronize()
    n = 10
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(n):
            torch.autograd.grad(o, inputs, do, retain_graph=True)
        torch.cuda.synchronize()
    per = {e.key[:60]: e.device_time_total / n for e in prof.key_averages() if e.device_time_total > 0}
    total = sum(per.values())
    out[name] = {"bwd_kernels_us": total, "per_kernel_us": per}
    dq = {k: round(v, 1) for k, v in per.items() if "dqkwg" in k}
    print(f"{name}: bwd kernels {total:.1f} us  dqkwg {dq}", flush=True)
with open(sys.argv[2], "w") as f:
    json.dump(out, f, indent=1)
