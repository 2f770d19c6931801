"""dg of the Triton gated delta backend against the SPEC section 5 rule under strongly negative scalar gates.

Session 45's SPEC audit: with ``g ~ c`` per token (a decay of e^c), fp16, K = V = 16, l2norm and an initial state,
o, the final state and every other gradient passed, but dg missed the rule from c = -10 on (CPU interpreter:
c = -10 error 1.6e-7 against an allowance of 1.0e-7; c = -20 4.4e-9 against 4.5e-12, larger than dg itself, gold rms
5.7e-10), on the fp32 route (T*HV = 180) and on the fp16 kernels (T*HV = 1108) alike. Cause: two O(1) pairs that
cancel exactly inside dqkwg's gate sums (the intra-chunk diagonal, the state update's last row), whose fp32 rounding
the reverse cumsum of dG carried into dg = O(e^g). Fixed the same session (both pairs left out); every line passes.

    TRITON_INTERPRET=1 PYTHONPATH=src python benchmarks/gd_strong_gate_dg.py
"""

import torch

import jagattn
from jagattn import testing
from jagattn.gated_delta.reference import gated_delta_reference


def run(c, lengths, h, hv, K=16, V=16, seed=0):  # noqa: N803 - head dims as in SPEC
    gen = testing.generator(seed)
    T = sum(lengths)
    cu = testing.cu_seqlens(lengths)
    a = dict(
        q=testing.randn([T, h, K], dtype=torch.float16, generator=gen),
        k=testing.randn([T, h, K], dtype=torch.float16, generator=gen),
        v=testing.randn([T, hv, V], dtype=torch.float16, generator=gen),
        g=c + 0.1 * testing.randn([T, hv], generator=gen).clamp(-1, 0),
        beta=torch.sigmoid(testing.randn([T, hv], generator=gen)),
        h0=testing.randn([len(lengths), hv, K, V], generator=gen),
    )
    w = None
    res = {}
    for tag, fn, dt in (("got", "triton", None), ("gold", "ref", torch.float64), ("low", "ref", "half")):
        x = {
            n: (t.double() if dt == torch.float64 else t).detach().clone().requires_grad_(True)
            for n, t in a.items()
        }
        if fn == "triton":
            o, fs = jagattn.gated_delta_rule(
                *(x[n] for n in ("q", "k", "v", "g", "beta")),
                cu_seqlens=cu,
                initial_state=x["h0"],
                output_final_state=True,
                use_qk_l2norm=True,
                backend="triton",
            )
        else:
            o, fs = gated_delta_reference(
                x["q"],
                x["k"],
                x["v"],
                x["g"],
                x["beta"],
                cu,
                initial_state=x["h0"],
                use_qk_l2norm=True,
                compute_dtype=None if dt == torch.float64 else torch.float16,
            )
        if w is None:
            gw = torch.Generator().manual_seed(1)
            w = (
                torch.randn(o.shape, generator=gw, dtype=torch.float64),
                torch.randn(fs.shape, generator=gw, dtype=torch.float64),
            )
        ((o.double() * w[0]).sum() + (fs.double() * w[1]).sum()).backward()
        res[tag] = {n: t.grad for n, t in x.items()}
        res[tag]["o"] = o.detach()
    fails = []
    for n in ("o", "q", "k", "v", "g", "beta", "h0"):
        try:
            testing.check_close(("" if n == "o" else "d") + n, res["got"][n], res["gold"][n], res["low"][n])
        except AssertionError as e:
            fails.append(str(e))
    print(
        f"g~{c:6.1f} lengths={lengths} HV={hv}: "
        + ("PASS" if not fails else "FAIL\n   " + "\n   ".join(fails)),
        flush=True,
    )


for c in (-6.0, -8.0, -10.0, -20.0):
    run(c, [70, 20], 1, 2)  # fp16, T*HV = 180: the fp32 route
run(-10.0, [150, 107, 20], 2, 4)  # fp16, T*HV = 1108: the fp16 kernels
