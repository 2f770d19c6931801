"""Session 25 round 10 helper: round 6's speed-path precision miss (4 heads, HV == H, K = 64, V = 128, 8192 tokens in
4 random-length sequences, g = logsigmoid(randn + 3), l2norm, bf16, no initial state; final_state 1.05x the SPEC
allowance) under the precision knobs of the environment (JAGATTN_GD_BF16_KEEP / _FP32 / _PRECISE, read at import):
prints every output's max-abs error over its max-abs allowance (``2 x`` the bf16 reference run's + the floor,
the max half of ``testing.check_close``; <= 1 passes it), then the H16-8seqs forward / backward
ms under the same knobs.   PYTHONPATH=src python3 benchmarks/rounds/s25_k64_case.py [--variant FILE NAME]

``--variant FILE NAME``: the run under a ``src_variant_ab`` variant (``VARIANTS[NAME]`` of FILE's text substitutions).
"""

import os
import sys

import torch

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(root, "tests"))
sys.path.insert(0, os.path.join(root, "benchmarks"))
import gated_delta_triton as gdt  # noqa: E402

import jagattn  # noqa: E402
import test_gated_delta_triton as T  # noqa: E402

knobs = {k: v for k, v in os.environ.items() if k.startswith("JAGATTN_GD_")}
variant = None
if "--variant" in sys.argv:
    import runpy

    from src_variant_ab import Variant

    i = sys.argv.index("--variant")
    file, name = sys.argv[i + 1], sys.argv[i + 2]
    variant = Variant(name, runpy.run_path(file)["VARIANTS"][name])
    if variant.check() is not None:
        raise SystemExit(variant.check())
    variant.__enter__()
    knobs["variant"] = name
case = T.make_case(T._rand_lengths(8192, 4, 2), 4, 4, 64, 128, dtype=torch.bfloat16, with_init=False, l2=True,
                   seed=13, device="cuda", g_shift=3.0)  # fmt: skip
got = T.run_triton(case)
gold = T.run_reference(case, cast=torch.float32)
lowp = T.run_reference(case, cast=torch.bfloat16, compute_dtype=torch.bfloat16)
ratios = {}
for name in gold:
    err = (got[name].float() - gold[name].float()).abs().max().item()
    ref = (lowp[name].float() - gold[name].float()).abs().max().item()
    floor = 1e-5 * gold[name].float().pow(2).mean().sqrt().item()
    ratios[name] = err / (2.0 * ref + floor)
print(f"{knobs}: error / allowance " + " ".join(f"{n} {r:.2f}" for n, r in ratios.items()), flush=True)
q, k, v, g, beta, cu = gdt.make(16, [4096] * 8)
leaves = [x.detach().requires_grad_(True) for x in (q, k, v, g, beta)]
do = torch.randn_like(v)


def fwd():
    return jagattn.gated_delta_rule(*leaves, cu_seqlens=cu, use_qk_l2norm=True, backend="triton")[0]


import triton  # noqa: E402

with torch.no_grad():
    t_f = triton.testing.do_bench(fwd, warmup=25, rep=150, return_mode="median")
t_fb = triton.testing.do_bench(
    lambda: fwd().backward(do), warmup=25, rep=150, grad_to_none=leaves, return_mode="median"
)
print(f"  H16-8seqs fwd {t_f:.3f} bwd {t_fb - t_f:.3f} ms", flush=True)
