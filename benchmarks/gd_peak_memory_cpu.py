"""Which tensors are alive at the peak of one gated delta forward+backward, without a GPU.

The Triton kernels are stubbed (Triton's CPU interpreter is told to return at once), so only the
allocation pattern of ``jagattn.gated_delta_rule(..., backend="triton")`` runs, at the suite's full
sizes (32768 tokens, K = V = 128, bf16, l2norm, no initial / final state, the bench's rows by sequence
count). Python wrappers around the torch factories (``empty``, ``zeros``, ``*_like``, ``new_*``,
``to``, ``sum``, ``contiguous``, ``float``) record every tensor they return with its bytes and a
``weakref.finalize``; the peak of the live sum and the tensors alive there are printed. Allocations
made in C++ (autograd's materialised zero gradients) are not seen. Session 6: the tracked peak of
H16-8seqs (2200 MiB) was within 12 MiB of the H200's measured 2.32 GB.

``python benchmarks/gd_peak_memory_cpu.py [--seqs 8,64] [--heads 16]`` (about 1 minute per row).
"""

from __future__ import annotations

import argparse
import os
import weakref

os.environ["TRITON_INTERPRET"] = "1"  # before triton is imported

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import triton.runtime.interpreter as interpreter  # noqa: E402

import jagattn  # noqa: E402

TOTAL, DIM = 32768, 128


class Tracker:
    def __init__(self) -> None:
        self.on = False
        self.live = 0
        self.peak = 0
        self.alive: dict[int, tuple[str, tuple, str, int]] = {}
        self.at_peak: list[tuple[str, tuple, str, int]] = []

    def reset(self) -> None:
        self.live = self.peak = 0
        self.alive.clear()
        self.at_peak = []

    def add(self, t, where: str):
        if not self.on or not isinstance(t, torch.Tensor):
            return t
        key = t.untyped_storage().data_ptr()
        if key in self.alive or t.untyped_storage().nbytes() == 0:
            return t  # a view of a tracked storage, or nothing allocated
        n = t.untyped_storage().nbytes()
        self.alive[key] = (where, tuple(t.shape), str(t.dtype).replace("torch.", ""), n)
        self.live += n
        if self.live > self.peak:
            self.peak, self.at_peak = self.live, list(self.alive.values())
        weakref.finalize(t, self._free, key, n)
        return t

    def _free(self, key: int, n: int) -> None:
        if self.alive.pop(key, None) is not None:
            self.live -= n


def install(tr: Tracker) -> None:
    interpreter.InterpretedFunction.run = lambda self, *a, **k: None  # kernels do nothing
    for name in ("empty", "zeros", "empty_like", "zeros_like", "ones_like", "full"):
        orig = getattr(torch, name)
        setattr(torch, name, lambda *a, _o=orig, _n=name, **k: tr.add(_o(*a, **k), _n))
    for name in ("new_empty", "new_zeros", "contiguous", "to", "sum", "float"):
        orig = getattr(torch.Tensor, name)

        def method(self, *a, _o=orig, _n=name, **k):
            r = _o(self, *a, **k)
            return r if r is self else tr.add(r, "Tensor." + _n)

        setattr(torch.Tensor, name, method)


def run_row(tr: Tracker, seqs: int, heads: int) -> None:
    lengths = [TOTAL // seqs] * seqs
    q, k, v = (torch.randn(TOTAL, heads, DIM, dtype=torch.bfloat16) for _ in range(3))
    g = F.logsigmoid(torch.randn(TOTAL, heads))
    beta = torch.sigmoid(torch.randn(TOTAL, heads)).to(torch.bfloat16)
    cu = torch.tensor([0] + torch.tensor(lengths).cumsum(0).tolist(), dtype=torch.int32)
    leaves = [x.requires_grad_() for x in (q, k, v, g, beta)]
    do = torch.ones(TOTAL, heads, DIM, dtype=torch.bfloat16)
    tr.reset()
    tr.on = True
    o = jagattn.gated_delta_rule(*leaves, cu_seqlens=cu, use_qk_l2norm=True, backend="triton")[0]
    fwd_peak = tr.peak
    o.backward(do)
    tr.on = False
    print(
        f"H{heads} {seqs} seqs: peak {tr.peak / 2**20:.1f} MiB over the inputs (forward alone {fwd_peak / 2**20:.1f})"
    )
    for where, shape, dtype, n in sorted(tr.at_peak, key=lambda x: -x[3]):
        print(f"    {n / 2**20:8.1f} MiB  {dtype:9s} {str(shape):24s} {where}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seqs", default="8,64")
    ap.add_argument("--heads", type=int, default=16)
    args = ap.parse_args()
    tr = Tracker()
    install(tr)
    for s in args.seqs.split(","):
        run_row(tr, int(s), args.heads)


if __name__ == "__main__":
    main()
