"""The gate-gradient identity of session 33, checked on the CPU reference (issue #6; not used by the library).

With ``S~_t = exp(-G_t) S_t`` the gated delta recurrence only sees the gates through ``q~ = exp(G) q`` and
``v~ = exp(-G) v``, so ``dg_t = sum_{s >= t in the sequence} (q_s . dq_s - v_s . dv_s) + <S_final, dht>`` (q, dq of the
normalised q; dq per value head). This script prints (1) how well that matches autograd in fp64 and (2) the error of
dg formed this way from the bf16 reference run's dq and dv, against that run's own dg error, when the identity is
used inside windows of ``w`` rows with the exact dg at each window's start (``w = 64``: chunk-local use).

Session 33 (torch 2.13 CPU): exact to ~1e-14; from the bf16 run's dq / dv the rms error is 1.1x (g shift 6) to 9x
(shift 0) the bf16 run's dg error at w = 64 and 6-40x over whole sequences: the errors of dq and dv do not cancel over
many rows while the exact terms do. So dg stays on the state / state-gradient inner products.

Usage: ``PYTHONPATH=src python benchmarks/gd_dg_identity_check.py [tokens] [g_shift]`` (2048 tokens: a few minutes).
"""

import sys

import torch

from jagattn.gated_delta.reference import gated_delta_reference, l2norm

T, H, K, V = int(sys.argv[1]) if len(sys.argv) > 1 else 2048, 2, 32, 32
shift = float(sys.argv[2]) if len(sys.argv) > 2 else 1.0
cu = torch.tensor([0, T // 3, T])
N = 2


def mk(dt):
    torch.manual_seed(1)
    q = torch.randn(T, H, K)
    k = torch.randn(T, H, K)
    v = torch.randn(T, H, V)
    g = torch.nn.functional.logsigmoid(torch.randn(T, H) + shift)
    beta = torch.rand(T, H)
    h0 = torch.randn(N, H, K, V)
    return [x.to(dt) for x in (q, k, v, g, beta)] + [
        h0.to(torch.float64 if dt == torch.float64 else torch.float32)
    ]


def run(dt, cd):
    q, k, v, g, beta, h0 = mk(dt)
    qn = l2norm(q.double()).to(dt).requires_grad_()
    kn = l2norm(k.double()).to(dt)
    v.requires_grad_()
    g.requires_grad_()
    o, fs = gated_delta_reference(qn, kn, v, g, beta, cu, initial_state=h0, compute_dtype=cd)
    torch.manual_seed(2)
    do = torch.randn(o.shape, dtype=torch.float64).to(o.dtype)
    dht = torch.randn(fs.shape, dtype=torch.float64).to(fs.dtype)
    dq, dv, dg = torch.autograd.grad((o.to(fs.dtype) * do.to(fs.dtype)).sum() + (fs * dht).sum(), (qn, v, g))
    dG = (qn.detach().double() * dq.double()).sum(-1) - (v.detach().double() * dv.double()).sum(-1)
    return dg.double(), dG


ex, exG = run(torch.float64, None)
d, dG = run(torch.float32, torch.bfloat16)


def windowed(dG, w):
    # identity inside windows of w rows from each sequence start; exact dg at window boundaries (from the fp64 run)
    out = torch.zeros_like(dG)
    for n in range(N):
        b, e = int(cu[n]), int(cu[n + 1])
        for s in range(b, e, w):
            s2 = min(s + w, e)
            carry = (
                ex[s2] if s2 < e else (ex[e - 1] - exG[e - 1])
            )  # exact dg of the next window's first row / final term
            out[s:s2] = dG[s:s2].flip(0).cumsum(0).flip(0) + carry
    return out


# the last row's carry is taken from autograd (it is <S_final, dht>), so this checks the sum over the other rows
print(f"identity vs autograd, fp64, whole sequences: max {(windowed(exG, 10**9) - ex).abs().max():.2e}")
e1 = d - ex
print(f"shift {shift} T {T}: bf16-run dg err max {e1.abs().max():.3e} rms {e1.pow(2).mean().sqrt():.3e}")
for w in (64, 256, 512, 100000):
    e2 = windowed(dG, w) - ex
    print(f"  window {w}: identity max {e2.abs().max():.3e} rms {e2.pow(2).mean().sqrt():.3e}")
