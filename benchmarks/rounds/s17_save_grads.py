"""Session 17: o and the gradients of one attention suite row through the Triton backend, saved to a file, so two
source trees (PYTHONPATH) can be compared bitwise in another process. Usage:
``PYTHONPATH=<tree>/src python3 s17_save_grads.py <row> <out.pt> [atomic]``; ``--compare a.pt b.pt``."""

import os
import sys

import torch

if sys.argv[1] == "--compare":
    a, b = torch.load(sys.argv[2]), torch.load(sys.argv[3])
    for k in a:
        same = torch.equal(a[k], b[k])
        diff = (a[k].float() - b[k].float()).abs().max().item()
        print(f"{k}: {'bitwise' if same else f'max abs diff {diff:.3e}'}")
    sys.exit(0)

if len(sys.argv) > 3:
    os.environ["JAGATTN_ATTN_DQ"] = sys.argv[3]
from jagattn.bench import cases, suites  # noqa: E402

row = {r.name: r for r in suites.all_rows() if r.family == "attention"}[sys.argv[1]]
fam = cases.AttentionFamily()
p = fam.build(row, torch.device("cuda"), torch.bfloat16)
leaves = p.leaves()
o = fam.call(p, leaves, "triton")
do = torch.randn(o.shape, generator=torch.Generator().manual_seed(7)).to(o)
grads = torch.autograd.grad(o, list(leaves.values()), do)
torch.save(
    {"o": o.detach().cpu(), **{f"d{k}": g.cpu() for k, g in zip(leaves, grads, strict=True)}}, sys.argv[2]
)
print("saved", sys.argv[2])
