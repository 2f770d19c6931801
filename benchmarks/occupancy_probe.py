"""Resident programs per SM of every jagattn Triton kernel one public call compiled (GPU only).

Runs one forward + backward of a BENCHMARKS.md row (``--family``, ``--row``; bf16, ``backend="triton"``,
``JAGATTN_AUTOTUNE=0`` unless set), then, for each compiled kernel in the JIT caches of the jagattn modules,
prints registers per thread, spill bytes, shared memory and the CUDA driver's
``cuOccupancyMaxActiveBlocksPerMultiprocessor`` (how many programs of that binary one SM holds at once), with
the SM count: a sequential pass with more programs than ``SMs x resident`` runs in waves.

Usage on the GPU machine: ``PYTHONPATH=src python3 benchmarks/occupancy_probe.py --family gated_delta
--row H16-8seqs`` (``--json FILE`` writes the table).
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import sys

os.environ.setdefault("JAGATTN_AUTOTUNE", "0")

import torch  # noqa: E402
import triton  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from src_variant_ab import _all_jagattn_jit  # noqa: E402  (every JIT function of the imported jagattn modules)

from jagattn.bench import suites  # noqa: E402


def _occupancy(kernel, threads: int, smem: int) -> int:
    cuda = ctypes.CDLL("libcuda.so.1")
    n = ctypes.c_int(0)
    rc = cuda.cuOccupancyMaxActiveBlocksPerMultiprocessor(
        ctypes.byref(n), ctypes.c_void_p(kernel.function), ctypes.c_int(threads), ctypes.c_size_t(smem)
    )
    return n.value if rc == 0 else -rc


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--family", required=True, choices=("attention", "hstu", "gated_delta"))
    ap.add_argument("--row", required=True)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    if not torch.cuda.is_available():
        sys.exit("occupancy_probe.py needs a CUDA GPU")
    from jagattn.bench.cases import FAMILIES

    rows = suites.select_rows([args.family], args.row)
    if not rows:
        sys.exit(f"no row {args.row!r} in family {args.family!r}")
    fam = FAMILIES[args.family]
    p = fam.build(rows[0], torch.device("cuda"), torch.bfloat16)
    leaves = p.leaves()
    o = fam.call(p, leaves, "triton")
    o.backward(torch.randn_like(o))
    torch.cuda.synchronize()
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    out = []
    for fn in _all_jagattn_jit():
        for caches in fn.device_caches.values():
            for kernel in caches[0].values():
                kernel._init_handles()
                md = kernel.metadata
                threads = 32 * md.num_warps
                res = _occupancy(kernel, threads, md.shared)
                item = dict(kernel=fn.fn.__name__, warps=md.num_warps, stages=md.num_stages,
                            regs=kernel.n_regs, spill=kernel.n_spills, smem=md.shared, resident=res)  # fmt: skip
                out.append(item)
                print(f"{item['kernel']:44s} w{item['warps']} s{item['stages']} regs={item['regs']:3d} "
                      f"spill={item['spill']:4d} smem={item['smem']:6d} resident/SM={res}")  # fmt: skip
    print(
        f"SMs {sms}, {torch.cuda.get_device_name()}, torch {torch.__version__}, triton {triton.__version__}"
    )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(row=args.row, sms=sms, kernels=out), f, indent=1)


if __name__ == "__main__":
    main()
