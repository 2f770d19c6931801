import sys, torch
sys.path.insert(0, "tests")
from jagattn.gated_delta.triton import chunk_gk
import test_gated_delta_gk as T
import jagattn
for w in (2, 4):
    chunk_gk.KKT_WARPS = w
    case = T.make_case([100, 0, 300], 2, 4, 64, 64, dtype=torch.bfloat16, with_init=True, l2=True, with_g=True, strong=False, seed=6, device="cuda")
    args = [case[n] for n in ("q", "k", "v", "g", "beta", "gk", "cu_seqlens", "initial_state")]
    def f(q, k, v, g, beta, gk, cu, h0):
        return jagattn.gated_delta_rule(q, k, v, g, beta, cu_seqlens=cu, initial_state=h0, output_final_state=True, use_qk_l2norm=True, gk=gk, backend="triton")
    with torch.no_grad():
        outs = [f(*args) for _ in range(20)]
        det = all(torch.equal(o[0], outs[0][0]) and torch.equal(o[1], outs[0][1]) for o in outs)
        torch._dynamo.reset()
        oc = torch.compile(f, fullgraph=True)(*args)
        print(f"kkt warps {w}: eager deterministic over 20 runs: {det}; compiled == eager: o {torch.equal(oc[0], outs[0][0])} fs {torch.equal(oc[1], outs[0][1])}", flush=True)
