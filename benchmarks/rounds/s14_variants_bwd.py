"""Session 14 round 8: the attention backward with TMA loads (device-side tensor descriptors with the
sequence's own row bound: rows past the end read as zeros, as the masked / clamped pointer loads give) of
q/do in the dK/dV kernel and of k/v in the dQ kernel, and wider dQ tiles. For ``benchmarks/src_variant_ab.py``
(head dim == its block only: the 2-D descriptors over ``[T, H * D]`` would read the next head's columns)."""

from contextvars import ContextVar

import torch
import triton
from triton.runtime import _allocation


def _alloc(size, align, stream):
    return torch.empty(size, dtype=torch.int8, device="cuda")


# the scratch allocator as the ContextVar's default: the backward launches on autograd's worker thread
_allocation._allocator = ContextVar("_allocator", default=_alloc)

_B = "jagattn.attention.triton.bwd"

_DKDV_DESC = [
    (
        _B,
        "_attention_bwd_dkdv_kernel",
        "dk, dv, b_k, b_v, Q, DO, LSE, DELTA,",
        "dk, dv, b_k, b_v,"
        " tl.make_tensor_descriptor(Q, shape=[bos_q + lq, stride_qt], strides=[stride_qt, 1], block_shape=[BLOCK_M, BLOCK_D]),"
        " tl.make_tensor_descriptor(DO, shape=[bos_q + lq, stride_dot], strides=[stride_dot, 1], block_shape=[BLOCK_M, BLOCK_DV]),"
        " LSE, DELTA,",
    ),
    (
        _B,
        "_attention_bwd_dkdv_inner",
        """        b_q = _load_tile(
            Q + rows[:, None] * stride_qt + i_h * stride_qh + o_d[None, :], m_m, o_d < D, False, BLOCK_D != D
        )""",
        "        b_q = Q.load([bos_q + m0, i_h * stride_qh])",
    ),
    (
        _B,
        "_attention_bwd_dkdv_inner",
        """        b_do = _load_tile(
            DO + rows[:, None] * stride_dot + i_h * stride_doh + o_dv[None, :],
            m_m,
            o_dv < DV,
            False,
            BLOCK_DV != DV,
        )""",
        "        b_do = DO.load([bos_q + m0, i_h * stride_doh])",
    ),
]

_DQ_DESC = [
    (
        _B,
        "_attention_bwd_dq_kernel",
        "    p_k0 = K + (bos_k + o_n0).to(tl.int64)[:, None] * stride_kt + i_hk * stride_kh + o_d[None, :]\n",
        "    p_k0 = tl.make_tensor_descriptor(K + bos_k.to(tl.int64) * stride_kt + i_hk * stride_kh, shape=[lk, D],"
        " strides=[stride_kt, 1], block_shape=[BLOCK_N, BLOCK_D])\n",
    ),
    (
        _B,
        "_attention_bwd_dq_kernel",
        "    p_v0 = V + (bos_k + o_n0).to(tl.int64)[:, None] * stride_vt + i_hk * stride_vh + o_dv[None, :]\n",
        "    p_v0 = tl.make_tensor_descriptor(V + bos_k.to(tl.int64) * stride_vt + i_hk * stride_vh, shape=[lk, DV],"
        " strides=[stride_vt, 1], block_shape=[BLOCK_N, BLOCK_DV])\n",
    ),
    (
        _B,
        "_attention_bwd_dq_inner",
        "b_k = _load_tile(p_k0 + n0.to(tl.int64) * stride_kt, m_n, o_d < D, True, BLOCK_D != D)",
        "b_k = p_k0.load([n0, 0])",
    ),
    (
        _B,
        "_attention_bwd_dq_inner",
        "b_v = _load_tile(p_v0 + n0.to(tl.int64) * stride_vt, m_n, o_dv < DV, True, BLOCK_DV != DV)",
        "b_v = p_v0.load([n0, 0])",
    ),
]


def _tile(kernel, bm, bn, w, s, **extra):
    from jagattn.attention.triton import bwd

    saved = []

    def enter():
        k = getattr(bwd, kernel)
        saved[:] = k.configs
        k.configs = [triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, **extra}, num_warps=w, num_stages=s)]

    def leave():
        getattr(bwd, kernel).configs = list(saved)

    return (enter, leave)


VARIANTS = {
    "dkdv_desc": _DKDV_DESC,
    "dq_desc": _DQ_DESC,
    "both_desc": [*_DKDV_DESC, *_DQ_DESC],
    "dq_128x128s2": [_tile("_attention_bwd_dq_kernel", 128, 128, 8, 2)],
    "dq_desc_128x128s2": [*_DQ_DESC, _tile("_attention_bwd_dq_kernel", 128, 128, 8, 2)],
}  # fmt: skip
