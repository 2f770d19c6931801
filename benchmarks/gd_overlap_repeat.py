"""Repeatability of the gated delta backward under ``chunk_bwd.OVERLAP`` (session 49): the bf16 case of
``test_gpu_every_launch_config_same_result`` run N times per mode; prints, per mode and output, how many runs
differ from the first. Modes: off; on (recompute on the side stream); on_sync (side stream, device synchronised
right after the recompute's launch); on_serial (gate sums in dqkwg, no side stream).

    PYTHONPATH=src:tests python3 benchmarks/gd_overlap_repeat.py --runs 20
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))

import torch  # noqa: E402

from jagattn.gated_delta.triton import chunk_bwd as cb  # noqa: E402
from jagattn.gated_delta.triton import chunk_fwd as cf  # noqa: E402
from test_gated_delta_triton import make_case, run_triton  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--override", default="", help="kernel=bv,warps,stages: a common.CONFIG_OVERRIDE entry")
    ap.add_argument("--modes", default="off,on,on_sync,on_serial")
    args = ap.parse_args()
    if args.override:
        from jagattn.gated_delta.triton import common

        kernel, cfg = args.override.split("=")
        common.CONFIG_OVERRIDE[kernel] = tuple(int(x) for x in cfg.split(","))
    case = make_case(
        [0, 1, 63, 64, 65, 130, 300], 2, 4, 128, 128, dtype=torch.bfloat16, with_init=True, l2=True, seed=9,
        device="cuda",
    )  # fmt: skip
    side_orig, pass_orig = cb._side_stream, cf._state_pass

    def synced(*a, **kw):
        r = pass_orig(*a, **kw)
        torch.cuda.synchronize()
        return r

    for mode in args.modes.split(","):
        cb.OVERLAP = "off" if mode == "off" else "on"
        cb._side_stream = (lambda dev: None) if mode == "on_serial" else side_orig
        cb._state_pass = synced if mode == "on_sync" else pass_orig
        first = run_triton(case)
        bad = dict.fromkeys(first, 0)
        for _ in range(args.runs):
            got = run_triton(case)
            for name in first:
                bad[name] += not torch.equal(first[name], got[name])
        print(mode, {k: v for k, v in bad.items()}, flush=True)
    cb._side_stream, cb._state_pass = side_orig, pass_orig


if __name__ == "__main__":
    main()
