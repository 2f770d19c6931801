"""Feasibility spike (session 26, issue #4): the attention dK/dV loop written in Gluon with explicit async wgmma.

Why: sessions 16-24 found the Triton dK/dV kernel (64x64 tile, 4 warps, 2 programs per SM, 255 registers
and a small spill) waiting on its wgmmas: Triton 3.6 waits for every outstanding non-accumulating wgmma at
once, so a step's exp2 / dS work never overlaps its own matmuls. Gluon (``triton.experimental.gluon``,
in Triton 3.6) exposes ``warpgroup_mma(is_async=True)`` and ``warpgroup_mma_wait(num_outstanding, deps)``,
mbarriers and TMA, so the step can be scheduled by hand:

    [dK_{j-1}] S^T_j  dP^T_j  -- wait S^T --  P^T = exp2(S^T - lse2)   (overlaps dP^T_j)
    dV += P^T dO      -- wait dP^T --  dS^T = P^T (dP^T - delta)        (overlaps dV_j)
    dK += dS^T Q      (left in flight: overlaps the next step's TMA issue and loads)

This is a measurement, not a library kernel: D = Dv = 128, bf16, no softcap, causal or not (no window), any
GQA group, varlen through a host-side slot table. lse2 / delta come in the padded row layout the library's
dQ kernel writes (built here in torch). It checks dK / dV against the library's backward (same inputs) and
times both dK/dV kernels with the torch profiler on the suite rows (``jagattn.bench`` builds them).

Run on the GPU machine::

    PYTHONPATH=src python3 benchmarks/gluon_dkdv_spike.py --rows causal-mean8192-hkv16,skewed --out $OUT

``--compile-only`` (no GPU needed): compile the Gluon kernel for sm_90 with the local Triton and print its
registers / spill / shared memory.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys

import torch
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import mbarrier, tma, warpgroup_mma, warpgroup_mma_wait
from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

# Triton 3.6 names the TMA load async_copy_global_to_shared; 3.9 renamed it async_load (and removed the old name)
_tma_load = tma.async_load if hasattr(tma, "async_load") else tma.async_copy_global_to_shared
# the CTA barrier: thread_barrier in 3.6, barrier in 3.9
_cta_barrier = gl.barrier if hasattr(gl, "barrier") else gl.thread_barrier
ROW_PAD = 64
LOG2E = 1.4426950408889634


@gluon.jit
def _dkdv_gluon_kernel(
    q_desc,
    k_desc,
    v_desc,
    do_desc,
    LSE2,
    DELTA,
    DK,
    DV,
    CU_Q,
    CU_K,
    SLOT_B,
    SLOT_N,
    stride_dkt,
    stride_dvt,
    stride_pad_h,
    GROUP,
    scale,
    qk_scale,
    HEAD_D: gl.constexpr,
    BLOCK_M: gl.constexpr,
    BLOCK_N: gl.constexpr,
    STAGES: gl.constexpr,
    CAUSAL: gl.constexpr,
    ROW_PAD_C: gl.constexpr,
    DEFER_DK: gl.constexpr,
    num_warps: gl.constexpr,
):
    gl.static_assert(STAGES >= 2)
    i_slot = gl.program_id(0)
    i_hk = gl.program_id(1)
    i_b = gl.load(SLOT_B + i_slot)
    n0 = gl.load(SLOT_N + i_slot)
    bos_k = gl.load(CU_K + i_b)
    lk = gl.load(CU_K + i_b + 1) - bos_k
    bos_q = gl.load(CU_Q + i_b)
    lq = gl.load(CU_Q + i_b + 1) - bos_q
    diag = lk - lq
    pad_q = (bos_q // ROW_PAD_C + i_b) * ROW_PAD_C

    # layouts: S^T / dP^T [BLOCK_N, BLOCK_M]; dK / dV [BLOCK_N, D]; warps stacked along the key rows
    s_layout: gl.constexpr = gl.NVMMADistributedLayout(
        version=[3, 0], warps_per_cta=[num_warps, 1], instr_shape=[16, BLOCK_M, 16]
    )
    acc_layout: gl.constexpr = gl.NVMMADistributedLayout(
        version=[3, 0], warps_per_cta=[num_warps, 1], instr_shape=[16, HEAD_D, 16]
    )
    a_layout: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=acc_layout, k_width=2)
    col_layout: gl.constexpr = gl.SliceLayout(0, s_layout)
    row_layout: gl.constexpr = gl.SliceLayout(1, s_layout)

    # query rows that see some key of the block: [lo, hi); all of them: [full_lo, lq)
    n_last = gl.minimum(n0 + BLOCK_N, lk) - 1
    if CAUSAL:
        lo = gl.maximum(n0 - diag, 0)
        full_lo = gl.maximum(n_last - diag, 0)
    else:
        lo = n0 * 0
        full_lo = lo
    hi = lq
    full_hi = lq
    if n0 + BLOCK_N > lk:
        full_hi = full_lo
    m_start = (lo // BLOCK_M) * BLOCK_M
    m_stop = m_start + gl.cdiv(gl.maximum(hi - m_start, 0), BLOCK_M) * BLOCK_M
    m_a = gl.minimum(m_start + gl.cdiv(gl.maximum(full_lo - m_start, 0), BLOCK_M) * BLOCK_M, m_stop)
    m_b = gl.minimum(m_a + (gl.maximum(full_hi - m_a, 0) // BLOCK_M) * BLOCK_M, m_stop)
    n_blocks = (m_stop - m_start) // BLOCK_M
    total = GROUP * n_blocks

    k_smem = gl.allocate_shared_memory(k_desc.dtype, [BLOCK_N, HEAD_D], k_desc.layout)
    v_smem = gl.allocate_shared_memory(v_desc.dtype, [BLOCK_N, HEAD_D], v_desc.layout)
    q_smem = gl.allocate_shared_memory(q_desc.dtype, [STAGES, BLOCK_M, HEAD_D], q_desc.layout)
    do_smem = gl.allocate_shared_memory(do_desc.dtype, [STAGES, BLOCK_M, HEAD_D], do_desc.layout)
    kv_bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    mbarrier.init(kv_bar, count=1)
    for s in gl.static_range(STAGES):
        mbarrier.init(ready.index(s), count=1)

    mbarrier.expect(kv_bar, k_desc.block_type.nbytes + v_desc.block_type.nbytes)
    _tma_load(k_desc, [bos_k + n0, i_hk * HEAD_D], kv_bar, k_smem)
    _tma_load(v_desc, [bos_k + n0, i_hk * HEAD_D], kv_bar, v_smem)
    qdo_bytes: gl.constexpr = q_desc.block_type.nbytes + do_desc.block_type.nbytes
    # prologue: steps 0 .. STAGES - 2 (the lookahead is STAGES - 2 + 1: a stage is refilled only after the
    # step that read it two iterations ago has retired its last wgmma, see the loop)
    for s in gl.static_range(STAGES - 1):
        pred = s < total
        g = s // gl.maximum(n_blocks, 1)
        m0 = m_start + (s - g * n_blocks) * BLOCK_M
        col = (i_hk * GROUP + g) * HEAD_D
        mbarrier.expect(ready.index(s), qdo_bytes, pred=pred)
        _tma_load(q_desc, [bos_q + m0, col], ready.index(s), q_smem.index(s), pred=pred)
        _tma_load(do_desc, [bos_q + m0, col], ready.index(s), do_smem.index(s), pred=pred)

    dk = gl.zeros([BLOCK_N, HEAD_D], gl.float32, acc_layout)
    dv = gl.zeros([BLOCK_N, HEAD_D], gl.float32, acc_layout)
    s_zero = gl.zeros([BLOCK_N, BLOCK_M], gl.float32, s_layout)
    o_m0 = gl.arange(0, BLOCK_M, layout=col_layout)
    o_n = n0 + gl.arange(0, BLOCK_N, layout=row_layout)
    mbarrier.wait(kv_bar, 0)

    ds = gl.zeros([BLOCK_N, BLOCK_M], gl.bfloat16, a_layout)  # the A operand of the dK wgmma in flight
    for j in range(total):
        st = j % STAGES
        g = j // n_blocks
        m0 = m_start + (j - g * n_blocks) * BLOCK_M
        i_h = i_hk * GROUP + g
        rows_pad = i_h.to(gl.int64) * stride_pad_h + pad_q + m0 + o_m0
        b_lse = gl.load(LSE2 + rows_pad)
        mbarrier.wait(ready.index(st), (j // STAGES) & 1)
        q_t = q_smem.index(st)
        do_t = do_smem.index(st)
        # queued behind dK_{j-1}: the tensor pipe gets three products back to back
        sT = warpgroup_mma(k_smem, q_t.permute((1, 0)), s_zero, use_acc=False, is_async=True)
        dpT = warpgroup_mma(v_smem, do_t.permute((1, 0)), s_zero, use_acc=False, is_async=True)
        # retires dK_{j-1} (in order) and S^T_j; dP^T_j may still run
        sT, dk, ds = warpgroup_mma_wait(1, deps=(sT, dk, ds))
        # every warpgroup is past step j - 1's last product: refill its stage with step j + STAGES - 1
        _cta_barrier()
        nxt = j + STAGES - 1
        pred = nxt < total
        g2 = nxt // n_blocks
        m2 = m_start + (nxt - g2 * n_blocks) * BLOCK_M
        col2 = (i_hk * GROUP + g2) * HEAD_D
        st2 = nxt % STAGES
        mbarrier.expect(ready.index(st2), qdo_bytes, pred=pred)
        _tma_load(q_desc, [bos_q + m2, col2], ready.index(st2), q_smem.index(st2), pred=pred)
        _tma_load(
            do_desc, [bos_q + m2, col2], ready.index(st2), do_smem.index(st2), pred=pred
        )
        pT = gl.exp2(sT * qk_scale - b_lse[None, :])
        if (m0 < m_a) | (m0 >= m_b):
            o_m = m0 + o_m0
            vis = (o_m < lq)[None, :] & (o_n < lk)[:, None]
            if CAUSAL:
                vis = vis & (o_n[:, None] <= o_m[None, :] + diag)
            pT = gl.where(vis, pT, 0.0)
        a = gl.convert_layout(pT.to(gl.bfloat16), a_layout)
        dv = warpgroup_mma(a, do_t, dv, is_async=True)
        b_delta = gl.load(DELTA + rows_pad)
        dpT = warpgroup_mma_wait(1, deps=(dpT,))  # dV_j may still run
        dsT = pT * (dpT - b_delta[None, :])
        ds = gl.convert_layout(dsT.to(gl.bfloat16), a_layout)
        dk = warpgroup_mma(ds, q_t, dk, is_async=True)
        # retires dV_j; dK_j stays in flight into the next step (its accumulator passes through the wait as the
        # loop-carried tensor: only the next dK wgmma reads it, and the next step's first wait retires it)
        if DEFER_DK:
            dv, dk, a = warpgroup_mma_wait(1, deps=(dv, dk, a))
        else:  # the plain order: every product of the step retired before the next step
            dv, dk, a, ds = warpgroup_mma_wait(0, deps=(dv, dk, a, ds))

    dk, dv, ds = warpgroup_mma_wait(0, deps=(dk, dv, ds))
    for s in gl.static_range(STAGES):
        mbarrier.invalidate(ready.index(s))
    mbarrier.invalidate(kv_bar)

    o_d = gl.arange(0, HEAD_D, layout=gl.SliceLayout(0, acc_layout))
    o_nr = n0 + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(1, acc_layout))
    rows = (bos_k + o_nr).to(gl.int64)
    m_st = (o_nr < lk)[:, None] & (o_d < HEAD_D)[None, :]
    gl.store(DK + rows[:, None] * stride_dkt + i_hk * HEAD_D + o_d[None, :], (dk * scale).to(gl.bfloat16), mask=m_st)
    gl.store(DV + rows[:, None] * stride_dvt + i_hk * HEAD_D + o_d[None, :], dv.to(gl.bfloat16), mask=m_st)


def dkdv_gluon(q, k, v, do, lse2_pad, delta_pad, cu, lengths, causal, scale, block_m=64, block_n=64,
               stages=2, num_warps=4, defer_dk=True):  # fmt: skip
    tq, hq, d = q.shape
    tk, hkv, _ = k.shape
    group = hq // hkv
    lay_q = gl.NVMMASharedLayout.get_default_for([block_m, d], gl.bfloat16)
    lay_k = gl.NVMMASharedLayout.get_default_for([block_n, d], gl.bfloat16)
    q_desc = TensorDescriptor(q.view(tq, hq * d), [tq, hq * d], [hq * d, 1], [block_m, d], lay_q)
    do_desc = TensorDescriptor(do.view(tq, hq * d), [tq, hq * d], [hq * d, 1], [block_m, d], lay_q)
    k_desc = TensorDescriptor(k.view(tk, hkv * d), [tk, hkv * d], [hkv * d, 1], [block_n, d], lay_k)
    v_desc = TensorDescriptor(v.view(tk, hkv * d), [tk, hkv * d], [hkv * d, 1], [block_n, d], lay_k)
    sb, sn = [], []
    for b, n in enumerate(lengths):
        for i in range(math.ceil(n / block_n)):
            sb.append(b)
            sn.append(i * block_n)
    slot_b = torch.tensor(sb, dtype=torch.int32, device=q.device)
    slot_n = torch.tensor(sn, dtype=torch.int32, device=q.device)
    dk = torch.empty_like(k)
    dv = torch.empty_like(v)
    grid = (len(sb), hkv)
    _dkdv_gluon_kernel[grid](
        q_desc, k_desc, v_desc, do_desc, lse2_pad, delta_pad, dk, dv, cu, cu, slot_b, slot_n,
        dk.stride(0), dv.stride(0), lse2_pad.stride(0), group, float(scale), float(scale * LOG2E),
        HEAD_D=d, BLOCK_M=block_m, BLOCK_N=block_n, STAGES=stages, CAUSAL=causal, ROW_PAD_C=ROW_PAD,
        DEFER_DK=defer_dk, num_warps=num_warps,
    )  # fmt: skip
    return dk, dv


def padded_row_stats(lse, delta, lengths, hq):
    """lse2 / delta ``[Hq, rows]`` in the row-padded layout (sequence b's row i at ``(bos//64 + b)*64 + i``,
    padding rows lse2 = +inf, delta = 0); ``lse`` / ``delta`` are ``[Hq, T]``."""
    t = sum(lengths)
    rows = (t // ROW_PAD + len(lengths) + 1) * ROW_PAD
    lse2 = torch.full((hq, rows), float("inf"), device=lse.device, dtype=torch.float32)
    dl = torch.zeros((hq, rows), device=lse.device, dtype=torch.float32)
    bos = 0
    for b, n in enumerate(lengths):
        p0 = (bos // ROW_PAD + b) * ROW_PAD
        seg = lse[:, bos : bos + n].float()
        lse2[:, p0 : p0 + n] = torch.where(torch.isneginf(seg), float("inf"), seg * LOG2E)
        dl[:, p0 : p0 + n] = delta[:, bos : bos + n]
        bos += n
    return lse2, dl


def kernel_ms(fn, name_part, reps=10):
    for _ in range(2):
        fn()
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(reps):
            fn()
        torch.cuda.synchronize()
    tot = [e.device_time_total for e in prof.key_averages() if name_part in e.key]
    return sum(tot) / 1e3 / reps if tot else float("nan")


def run_row(row_name, configs, log):
    import jagattn
    from jagattn.bench import suites
    from jagattn.bench.cases import FAMILIES

    fam = FAMILIES["attention"]
    row = {r.name: r for r in suites.all_rows() if r.family == "attention"}[row_name]
    p = fam.build(row, torch.device("cuda"), torch.bfloat16)
    q, k, v = (p.tensors[n] for n in ("q", "k", "v"))
    causal = p.params["causal"]
    if tuple(p.params["window"]) != (-1, -1):
        log(f"{row_name}: window rows not supported by the spike, skipped")
        return None
    lengths = list(p.lengths)
    cu = p.cu_seqlens.to(torch.int32)
    mx = max(lengths)
    scale = 1.0 / math.sqrt(q.shape[-1])
    qg, kg, vg = (t.detach().clone().requires_grad_(True) for t in (q, k, v))
    o, lse = jagattn.attention(qg, kg, vg, cu, cu, mx, mx, causal=causal, return_lse=True, backend="triton")
    do = torch.randn_like(o)
    dq_ref, dk_ref, dv_ref = torch.autograd.grad(o, (qg, kg, vg), do, retain_graph=True)
    hq = q.shape[1]
    lse_h = lse if lse.shape[0] == hq else lse.t()
    delta = (o.float() * do.float()).sum(-1).t().contiguous()  # [Hq, T]
    lse2_pad, delta_pad = padded_row_stats(lse_h.contiguous(), delta, lengths, hq)

    def lib_bwd():
        torch.autograd.grad(o, (qg, kg, vg), do, retain_graph=True)

    t_lib = kernel_ms(lib_bwd, "_attention_bwd_dkdv_kernel")
    t_lib_dq = kernel_ms(lib_bwd, "_attention_bwd_dq_kernel")
    out = {"row": row_name, "lengths_mean": sum(lengths) / len(lengths), "hq": hq, "hkv": k.shape[1],
           "causal": causal, "lib_dkdv_ms": t_lib, "lib_dq_ms": t_lib_dq, "gluon": {}}  # fmt: skip
    log(f"{row_name}: library dK/dV kernel {t_lib:.3f} ms, dQ kernel {t_lib_dq:.3f} ms")
    for cfg in configs:
        bm, bn, st, w, defer = cfg
        name = f"{bm}x{bn}s{st}w{w}" + ("" if defer else "n")
        try:
            dk, dv = dkdv_gluon(q, k, v, do, lse2_pad, delta_pad, cu, lengths, causal, scale, bm, bn, st, w, defer)
            torch.cuda.synchronize()
            err_k = ((dk.float() - dk_ref.float()).abs().max() / dk_ref.float().abs().max()).item()
            err_v = ((dv.float() - dv_ref.float()).abs().max() / dv_ref.float().abs().max()).item()
            t = kernel_ms(
                lambda: dkdv_gluon(q, k, v, do, lse2_pad, delta_pad, cu, lengths, causal, scale, bm, bn, st, w, defer),
                "_dkdv_gluon_kernel",
            )
            out["gluon"][name] = {"ms": t, "err_dk": err_k, "err_dv": err_v}
            log(f"  gluon {name}: {t:.3f} ms (x{t_lib / t:.3f} vs library), dk err {err_k:.3e}, dv err {err_v:.3e}")
        except Exception as e:  # noqa: BLE001 - a spike: report and go on
            out["gluon"][name] = {"error": repr(e)[:400]}
            log(f"  gluon {name}: ERROR {repr(e)[:400]}")
    return out


def compile_only(configs):
    from triton.backends.compiler import GPUTarget
    from triton.experimental.gluon._runtime import GluonASTSource

    for bm, bn, st, w, defer in configs:
        lay_q = gl.NVMMASharedLayout.get_default_for([bm, 128], gl.bfloat16)
        lay_k = gl.NVMMASharedLayout.get_default_for([bn, 128], gl.bfloat16)

        def desc(block, lay):
            return f"tensordesc<bf16[{block[0]}, {block[1]}],{lay!r}>"

        sig = {
            "q_desc": desc([bm, 128], lay_q), "k_desc": desc([bn, 128], lay_k), "v_desc": desc([bn, 128], lay_k),
            "do_desc": desc([bm, 128], lay_q), "LSE2": "*fp32", "DELTA": "*fp32", "DK": "*bf16", "DV": "*bf16",
            "CU_Q": "*i32", "CU_K": "*i32", "SLOT_B": "*i32", "SLOT_N": "*i32", "stride_dkt": "i32",
            "stride_dvt": "i32", "stride_pad_h": "i32", "GROUP": "i32", "scale": "fp32", "qk_scale": "fp32",
        }  # fmt: skip
        constexprs = {"HEAD_D": 128, "BLOCK_M": bm, "BLOCK_N": bn, "STAGES": st, "CAUSAL": True, "ROW_PAD_C": 64,
                      "DEFER_DK": defer, "num_warps": w}  # fmt: skip
        src = GluonASTSource(_dkdv_gluon_kernel, sig, constexprs)
        ck = triton.compile(src, target=GPUTarget("cuda", 90, 128), options={"num_warps": w})
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        from compile_check import _resources

        print(f"{bm}x{bn}s{st}w{w}{'' if defer else 'n'}: {_resources(ck.asm['cubin'])} smem={ck.metadata.shared}")
        if os.environ.get("SPIKE_DUMP"):
            d = os.environ["SPIKE_DUMP"]
            os.makedirs(d, exist_ok=True)
            for ext in ("ttgir", "ptx"):
                with open(os.path.join(d, f"{bm}x{bn}s{st}w{w}.{ext}"), "w") as f:
                    f.write(ck.asm[ext])


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", default="causal-mean8192-hkv16,causal-mean8192-hkv4,skewed,noncausal-mean2048")
    ap.add_argument("--configs", default="64x64s2w4,64x64s2w4n,64x64s3w4,64x128s2w8")
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    ap.add_argument("--compile-only", action="store_true")
    args = ap.parse_args()
    configs = []
    for c in args.configs.split(","):
        a, rest = c.split("x")
        b, rest = rest.split("s")
        s, w = rest.split("w")
        defer = not w.endswith("n")
        configs.append((int(a), int(b), int(s), int(w.rstrip("n")), defer))
    if args.compile_only:
        compile_only(configs)
        return 0
    lines = []

    def log(msg):
        print(msg, flush=True)
        lines.append(msg)

    log(f"torch {torch.__version__} triton {triton.__version__} {torch.cuda.get_device_name()}")
    results = [run_row(r, configs, log) for r in args.rows.split(",")]
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "gluon_dkdv_spike.json"), "w") as f:
        json.dump({"sha": os.environ.get("JAGATTN_GIT_SHA"), "results": results}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
