"""One forward + backward of chosen suite rows under Nsight Compute, ours and a peer, for kernel-level
comparisons (tensor-pipe utilisation, stall reasons, registers, occupancy, memory throughput).

Every implementation is warmed up (compiles, autotunes) outside the profiled range; then one forward and one
backward run between ``cudaProfilerStart`` / ``cudaProfilerStop``, so ``ncu --profile-from-start off`` sees
exactly those kernels. Run on the GPU machine (Firecracker kind: ncu reads the counters there)::

    ncu --profile-from-start off --clock-control none --section SpeedOfLight --section LaunchStats \
        --section Occupancy --section WarpStateStats --section ComputeWorkloadAnalysis -o $OUT/probe \
        python3 benchmarks/ncu_probe.py --family attention --rows causal-mean8192-hkv16 --impls triton,flex

    ncu --import $OUT/probe.ncu-rep --page details --csv > $OUT/probe.csv

Without ncu the script prints the CUDA time of each profiled kernel (torch profiler) instead, so it can be
checked anywhere a GPU is (``--no-ncu``).
"""

from __future__ import annotations

import argparse

import torch


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--family", required=True, choices=("attention", "hstu", "gated_delta"))
    ap.add_argument("--rows", required=True, help="comma list of suite row names")
    ap.add_argument(
        "--impls", default="triton", help="comma list: triton and/or peer names (flex, gr_triton, fla)"
    )
    ap.add_argument("--no-bwd", action="store_true")
    ap.add_argument("--no-ncu", action="store_true", help="print torch-profiler kernel times instead")
    args = ap.parse_args()

    from jagattn.bench import impls, suites
    from jagattn.bench.cases import FAMILIES

    fam = FAMILIES[args.family]
    chosen, _ = impls.resolve(args.family, args.impls)  # the bench's names: triton, flex, gr_triton, ...
    rows = {r.name: r for r in suites.all_rows() if r.family == args.family}
    for row_name in args.rows.split(","):
        p = fam.build(rows[row_name], torch.device("cuda"), torch.bfloat16)
        for impl in chosen:
            name, fn = impl.name, impl.prepare(p).fn
            leaves = p.leaves()
            o = fn(leaves)
            do = torch.randn_like(o)
            for _ in range(3):  # compile / autotune outside the profiled range
                o = fn(leaves)
                if not args.no_bwd:
                    o.backward(do)
            for t in leaves.values():  # no gradient accumulation kernels in the profiled pass
                t.grad = None
            torch.cuda.synchronize()
            print(f"=== {row_name} {name}", flush=True)
            if args.no_ncu:
                prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA])
                prof.__enter__()
            torch.cuda.nvtx.range_push(f"{row_name}/{name}")
            torch.cuda.cudart().cudaProfilerStart()
            o = fn(leaves)
            if not args.no_bwd:
                o.backward(do)
            torch.cuda.synchronize()
            torch.cuda.cudart().cudaProfilerStop()
            torch.cuda.nvtx.range_pop()
            if args.no_ncu:
                prof.__exit__(None, None, None)
                for e in prof.key_averages():
                    if e.device_time_total > 0:
                        print(f"  {e.device_time_total / 1e3:8.3f} ms  {e.key[:90]}")
            del leaves, o, do
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
