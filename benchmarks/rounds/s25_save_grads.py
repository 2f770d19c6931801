"""Session 25 round 9 helper: o and the gradients of one suite row (``gated_delta_triton.make`` inputs, 16 heads,
l2norm, backend triton) saved to a file, or two such files compared (bitwise, else ``max |a - b| / max |b|``).

    PYTHONPATH=<tree>/src python3 benchmarks/rounds/s25_save_grads.py H16-8seqs out.pt
    python3 benchmarks/rounds/s25_save_grads.py --compare a.pt b.pt
"""

import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

if sys.argv[1] == "--compare":
    a, b = torch.load(sys.argv[2]), torch.load(sys.argv[3])
    for n in a:
        same = torch.equal(a[n], b[n])
        rel = float((a[n].float() - b[n].float()).abs().max() / b[n].float().abs().max().clamp_min(1e-30))
        print(f"  {n}: {'bitwise' if same else f'{rel:.2e}'}")
    sys.exit(0)

import gated_delta_triton as gdt  # noqa: E402

import jagattn  # noqa: E402

row = {name: (h, kind) for name, h, kind in gdt.ROWS}[sys.argv[1]]
q, k, v, g, beta, cu = gdt.make(row[0], gdt.lengths_for(row[1]))
leaves = [x.detach().requires_grad_(True) for x in (q, k, v, g, beta)]
do = torch.randn(v.shape, generator=torch.Generator(device="cuda").manual_seed(1), device="cuda").to(v.dtype)
o = jagattn.gated_delta_rule(*leaves, cu_seqlens=cu, use_qk_l2norm=True, backend="triton")[0]
grads = torch.autograd.grad(o, leaves, do)
torch.save({"o": o.detach(), **{f"d{n}": x for n, x in zip("qkvgb", grads, strict=True)}}, sys.argv[2])
print(f"saved {sys.argv[1]} from {jagattn.__file__}")
