"""Session 14 round 3: TMA loads of K and V (device-side tensor descriptors, one per program with the
sequence's own row bound, so rows past the sequence end read as zeros exactly like the masked pointer
loads) in the attention forward and the HSTU forward/dQ kernel; and the 128x128 attention forward tile
that lost with pointer loads (255 registers). For ``benchmarks/src_variant_ab.py``."""

from contextvars import ContextVar  # noqa: E402

import torch
import triton
from triton.runtime import _allocation  # noqa: E402


def _alloc(size, align, stream):
    return torch.empty(size, dtype=torch.int8, device="cuda")


# the scratch allocator as the ContextVar's default: set_allocator would not reach autograd's worker
# thread, where the backward (the HSTU dQ kernel) launches (round 3 failed there)
_allocation._allocator = ContextVar("_allocator", default=_alloc)

_A = "jagattn.attention.triton.fwd"
_H = "jagattn.hstu.triton.fwd"

_A_DESC = [
    (
        _A,
        "_attention_fwd_kernel",
        "    p_k0 = K + (bos_k + o_n0).to(tl.int64)[:, None] * stride_kt + i_hk * stride_kh + o_d[None, :]\n",
        "    p_k0 = tl.make_tensor_descriptor(K + bos_k.to(tl.int64) * stride_kt + i_hk * stride_kh, shape=[lk, D],"
        " strides=[stride_kt, 1], block_shape=[BLOCK_N, BLOCK_D])\n",
    ),
    (
        _A,
        "_attention_fwd_kernel",
        "    p_v0 = V + (bos_k + o_n0).to(tl.int64)[:, None] * stride_vt + i_hk * stride_vh + o_dv[None, :]\n",
        "    p_v0 = tl.make_tensor_descriptor(V + bos_k.to(tl.int64) * stride_vt + i_hk * stride_vh, shape=[lk, DV],"
        " strides=[stride_vt, 1], block_shape=[BLOCK_N, BLOCK_DV])\n",
    ),
    (
        _A,
        "_fwd_scores",
        "b_k = _load_tile(p_k0 + n0.to(tl.int64) * stride_kt, m_n, o_d < D, True, BLOCK_D != D)",
        "b_k = p_k0.load([n0, 0])",
    ),
    (
        _A,
        "_fwd_update",
        "b_v = _load_tile(p_v0 + n0.to(tl.int64) * stride_vt, m_n, o_dv < DV, True, BLOCK_DV != DV)",
        "b_v = p_v0.load([n0, 0])",
    ),
]


def _a_tile(bm, bn, w, s):
    from jagattn.attention.triton import fwd

    saved = []

    def enter():
        saved[:] = fwd._attention_fwd_kernel.configs
        fwd._attention_fwd_kernel.configs = [
            triton.Config({"BLOCK_M": bm, "BLOCK_N": bn}, num_warps=w, num_stages=s)
        ]

    def leave():
        fwd._attention_fwd_kernel.configs = list(saved)

    return (enter, leave)


_H_DESC = [
    (
        _H,
        "_hstu_fwd_kernel",
        "    p_k0 = K + bos * stride_kn + i_h * stride_kh\n",
        "    p_k0 = tl.make_tensor_descriptor(K + bos * stride_kn + i_h * stride_kh, shape=[n, DQ],"
        " strides=[stride_kn, 1], block_shape=[BLOCK_N, BLOCK_DQ])\n",
    ),
    (
        _H,
        "_hstu_fwd_kernel",
        "    p_v0 = V + bos * stride_vn + i_h * stride_vh\n",
        "    p_v0 = tl.make_tensor_descriptor(V + bos * stride_vn + i_h * stride_vh, shape=[n, DV],"
        " strides=[stride_vn, 1], block_shape=[BLOCK_N, BLOCK_DV])\n",
    ),
    (
        _H,
        "_hstu_fwd_tile",
        "b_k = _load_rows(p_k0 + o_j[:, None].to(tl.int64) * stride_kn + o_dq[None, :], m_j, m_dq, PAD_DQ)",
        "b_k = p_k0.load([start_n, 0])",
    ),
    (
        _H,
        "_hstu_fwd_tile",
        "b_v = _load_rows(p_v0 + o_j[:, None].to(tl.int64) * stride_vn + o_dv[None, :], m_j, m_dv, PAD_DV)",
        "b_v = p_v0.load([start_n, 0])",
    ),
]

VARIANTS = {
    "a_desc": _A_DESC,
    "a_desc_128x128": [*_A_DESC, _a_tile(128, 128, 8, 3)],
    "a_ptr_128x128": [_a_tile(128, 128, 8, 3)],
    "a_ptr_128x128s2": [_a_tile(128, 128, 8, 2)],
    "a_ptr_256x64": [_a_tile(256, 64, 8, 3)],
    "a_ptr_256x64s2": [_a_tile(256, 64, 8, 2)],
    "h_desc": _H_DESC,
}  # fmt: skip
