"""Device diagnostic: the gated delta w/u kernel's products on bf16 tensor cores (opt-in switch
``jagattn.gated_delta.triton.chunk_fwd.WU_LOWP``, env ``JAGATTN_GD_WU_LOWP``: "off", "u" = U~ only,
"w" = W only, "wu" = W and U~) against the SPEC section 5 rule on the production gpu-test cases. Prints, per case and
variant, every output's error ratios ``err / (2 * ref_err + floor)`` for max-abs and rms (> 1 fails the
rule). Session 6 ran its predecessor on branch s5-next-bf16-t (switch ``common.LOWP_T``; "wu" there =
"wu" here): worst 1.74 (dg max-abs, 32k-single), so W and U~ both in bf16 failed.
``PYTHONPATH=src python3 benchmarks/gd_lowp_t_diag.py [--cases 32k-single,...] [--variants off,w] [--smoke]``.
Session 8 (H200): "u" FAILS on 32k-single with the same dg 1.74 as "wu", so U~'s rounding is the culprit.
"""

from __future__ import annotations

import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))
from jagattn import testing  # noqa: E402
from jagattn.gated_delta.triton import chunk_fwd  # noqa: E402
from test_gated_delta_triton import _rand_lengths, make_case, run_reference, run_triton  # noqa: E402

CASES = {
    "32k-single": ([32768], 1, 1),
    "32k-8seqs-gva2": (_rand_lengths(32768, 8, 0), 1, 2),
}
SMOKE = "--smoke" in sys.argv  # CPU interpreter, tiny fp16 cases: checks this script, not the kernels
DEV, DT = ("cpu", torch.float16) if SMOKE else ("cuda", torch.bfloat16)
if SMOKE:
    CASES = {"smoke-single": ([130], 1, 1), "smoke-gva2": ([63, 65], 1, 2)}
VARIANTS = ("off", "u", "w", "wu")
if "--variants" in sys.argv:
    VARIANTS = tuple(sys.argv[sys.argv.index("--variants") + 1].split(","))
if "--cases" in sys.argv:
    CASES = {k: CASES[k] for k in sys.argv[sys.argv.index("--cases") + 1].split(",")}


def main() -> None:
    print("jagattn", testing.__file__, flush=True)
    for cname, (lengths, h, hv) in CASES.items():
        t0 = time.time()
        d = 32 if SMOKE else 128
        case = make_case(lengths, h, hv, d, d, dtype=DT, with_init=True, l2=True, seed=7, device=DEV)
        gold = run_reference(case, cast=torch.float32)
        lowp = run_reference(case, cast=DT, compute_dtype=DT)
        print(f"{cname}: references in {time.time() - t0:.1f} s", flush=True)
        for vname in VARIANTS:
            chunk_fwd.WU_LOWP = vname
            got = run_triton(case)
            parts = []
            worst = 0.0
            for name in gold:
                e = testing.errors(got[name], gold[name])
                r = testing.errors(lowp[name], gold[name])
                floor = 1e-5 * testing.rms(gold[name])
                rm = e.max_abs / (2 * r.max_abs + floor)
                rr = e.rms / (2 * r.rms + floor)
                worst = max(worst, rm, rr)
                parts.append(f"{name} {rm:.2f}/{rr:.2f}")
            verdict = "PASS" if worst <= 1.0 else "FAIL"
            print(f"  {cname:16s} {vname:5s} {verdict} worst {worst:.2f} | " + "  ".join(parts), flush=True)


if __name__ == "__main__":
    main()
