"""Session 40: why the persistent dK/dV schedule is slower (round 3): each variant's registers, spills and shared
memory as Triton 3.6 compiles it on the device, and the dK/dV kernel's CUDA time on B256 at 1, 2 and 3 programs per
SM against one program per item (profiler, same process)."""

import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from src_variant_ab import kernel_ms  # noqa: E402

from jagattn.bench import suites  # noqa: E402
from jagattn.bench.cases import FAMILIES  # noqa: E402
from jagattn.hstu.triton import bwd_gluon as bg  # noqa: E402

for pers in (False, True):
    k = bg.compile_sm90(128, 128, torch.bfloat16, False, True, False, False, persistent=pers)
    k._init_handles()
    print(f"persistent={pers} regs {k.n_regs} spills {k.n_spills} shared {k.metadata.shared}", flush=True)

fam = FAMILIES["hstu"]
row = [r for r in suites.select_rows(["hstu"], "B256-N1024")][0]
p = fam.build(row, torch.device("cuda"), torch.bfloat16)
leaves = p.leaves()
o = fam.call(p, leaves, "triton")
do = torch.randn_like(o)


def fwd_bwd():
    fam.call(p, leaves, "triton").backward(do)


for rep in range(2):
    for pers, per_sm in (("0", 2), ("1", 1), ("1", 2), ("1", 3)):
        bg.PERSIST, bg.PERSIST_PROGRAMS_PER_SM = pers, per_sm
        ks = kernel_ms(fwd_bwd)
        t = [v for n, v in ks.items() if "dkdv" in n]
        print(f"persist={pers} per_sm={per_sm}: dkdv {t[0]:.3f} ms", flush=True)
