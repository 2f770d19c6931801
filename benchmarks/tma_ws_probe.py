"""Does Triton on Hopper gain from TMA descriptor loads and automatic warp specialization in an attention
forward? A standalone probe (not the library's kernel): packed ``[T, H, D]`` bf16 q/k/v of B sequences
of N tokens each, online-softmax forward, one program per (query block, sequence, head), in three
load forms with everything else equal:

- ``ptr``: pointer loads (``tl.load``; Triton pipelines them with cp.async), as the library kernels do;
- ``desc``: device-side tensor descriptors over the 2-D view ``[T, H * D]`` (``tl.make_tensor_descriptor``,
  TMA loads; the scratch allocator is set with ``triton.set_allocator``);
- ``desc_ws``: ``desc`` with ``tl.range(..., warp_specialize=True)`` on the key loop.

Causal rows use one loop with the element mask applied on the blocks that cross the diagonal (a run-time
branch), so all three forms have the same loop structure. Each (form, config) is checked against
``torch.nn.functional.scaled_dot_product_attention`` per sequence (max abs diff) before it is timed;
compile errors are reported, not raised.

Usage on the GPU machine: ``python3 benchmarks/tma_ws_probe.py --out $OUT`` (``--causal 0|1``,
``--n 8192 --b 4 --h 16``). Writes ``$OUT/tma_ws_probe.json`` and prints a table (TFLOP/s with the
SPEC convention: 4 * D * visible pairs * H).
"""

from __future__ import annotations

import argparse
import json
import os
import traceback

import torch
import triton
import triton.language as tl


@triton.jit
def _probe_fwd(
    Q, K, V, O, N, H: tl.constexpr, D: tl.constexpr, qk_scale,
    CAUSAL: tl.constexpr, FORM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
):  # fmt: skip
    # FORM: 0 pointer loads, 1 descriptors, 2 descriptors + warp specialization
    i_m = tl.program_id(0)
    i_bh = tl.program_id(1)
    i_b = i_bh // H
    i_h = i_bh % H
    bos = i_b * N
    m0 = i_m * BLOCK_M
    o_m = m0 + tl.arange(0, BLOCK_M)
    o_n0 = tl.arange(0, BLOCK_N)
    o_d = tl.arange(0, D)
    total = N * tl.num_programs(1) // H
    if FORM == 0:
        b_q = tl.load(Q + ((bos + o_m) * H + i_h)[:, None].to(tl.int64) * D + o_d[None, :])
    else:
        dq = tl.make_tensor_descriptor(Q, shape=[total, H * D], strides=[H * D, 1], block_shape=[BLOCK_M, D])
        dk = tl.make_tensor_descriptor(K, shape=[total, H * D], strides=[H * D, 1], block_shape=[BLOCK_N, D])
        dv = tl.make_tensor_descriptor(V, shape=[total, H * D], strides=[H * D, 1], block_shape=[BLOCK_N, D])
        b_q = dq.load([bos + m0, i_h * D])
    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, D], dtype=tl.float32)
    hi = tl.minimum(m0 + BLOCK_M, N) if CAUSAL else N
    n_full = m0 // BLOCK_N if CAUSAL else tl.cdiv(N, BLOCK_N)
    for t in tl.range(0, tl.cdiv(hi, BLOCK_N), warp_specialize=FORM == 2):
        n0 = t * BLOCK_N
        if FORM == 0:
            rows = ((bos + n0 + o_n0) * H + i_h)[:, None].to(tl.int64) * D + o_d[None, :]
            b_k = tl.load(K + rows)
            b_v = tl.load(V + rows)
        else:
            b_k = dk.load([bos + n0, i_h * D])
            b_v = dv.load([bos + n0, i_h * D])
        s = tl.dot(b_q, tl.trans(b_k)) * qk_scale
        if t >= n_full:
            s = tl.where(o_m[:, None] >= (n0 + o_n0)[None, :], s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        p = tl.math.exp2(s - m_new[:, None])
        r = tl.math.exp2(m_i - m_new)
        l_i = l_i * r + tl.sum(p, 1)
        acc = acc * r[:, None]
        acc = tl.dot(p.to(b_v.dtype), b_v, acc)
        m_i = m_new
    acc = acc / l_i[:, None]
    tl.store(O + ((bos + o_m) * H + i_h)[:, None].to(tl.int64) * D + o_d[None, :], acc.to(O.dtype.element_ty))


FORMS = {"ptr": 0, "desc": 1, "desc_ws": 2}
CONFIGS = [(128, 64, 4, 3), (128, 128, 8, 3), (128, 64, 8, 3), (128, 128, 8, 2), (64, 64, 4, 3)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    ap.add_argument("--b", type=int, default=4)
    ap.add_argument("--n", type=int, default=8192)
    ap.add_argument("--h", type=int, default=16)
    ap.add_argument("--causal", type=int, default=1)
    args = ap.parse_args()
    triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8, device="cuda"))
    b, n, h, d = args.b, args.n, args.h, 128
    gen = torch.Generator(device="cuda").manual_seed(0)
    q, k, v = (torch.randn(b * n, h, d, device="cuda", dtype=torch.bfloat16, generator=gen) for _ in range(3))
    scale = d**-0.5
    ref = torch.empty_like(q)
    for i in range(b):
        sl = slice(i * n, (i + 1) * n)
        ref[sl] = (
            torch.nn.functional.scaled_dot_product_attention(
                q[sl].transpose(0, 1),
                k[sl].transpose(0, 1),
                v[sl].transpose(0, 1),
                is_causal=bool(args.causal),
            )
            .transpose(0, 1)
            .contiguous()
        )
    pairs = b * (n * (n + 1) // 2 if args.causal else n * n)
    flops = 4 * d * pairs * h
    res = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": triton.__version__}
    res.update(vars(args))
    res["runs"] = []
    print(
        f"{res['device']} torch {res['torch']} triton {res['triton']} B={b} N={n} H={h} D=128 causal={args.causal}"
    )
    for form, code in FORMS.items():
        for bm, bn, w, s in CONFIGS:
            rec = {"form": form, "config": [bm, bn, w, s]}
            o = torch.empty_like(q)

            def run(o=o, bm=bm, bn=bn, w=w, s=s, code=code):
                grid = (triton.cdiv(n, bm), b * h)
                _probe_fwd[grid](
                    q, k, v, o, n, h, d, scale * 1.4426950408889634, bool(args.causal), code, bm, bn,
                    num_warps=w, num_stages=s,
                )  # fmt: skip

            try:
                run()
                torch.cuda.synchronize()
                rec["max_diff"] = float((o.float() - ref.float()).abs().max())
                ms = float(triton.testing.do_bench(run, warmup=25, rep=200, return_mode="median"))
                rec["ms"] = ms
                rec["tflops"] = flops / ms / 1e9
                print(
                    f"{form:8} {bm}x{bn} w{w} s{s}: {ms:.3f} ms {rec['tflops']:.0f} TFLOP/s diff {rec['max_diff']:.3g}"
                )
            except Exception as e:
                rec["error"] = f"{type(e).__name__}: {str(e)[:400]}"
                print(f"{form:8} {bm}x{bn} w{w} s{s}: ERROR {rec['error'][:200]}")
                traceback.print_exc(limit=1)
            res["runs"].append(rec)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, f"tma_ws_probe_c{args.causal}.json"), "w") as f:
        json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
