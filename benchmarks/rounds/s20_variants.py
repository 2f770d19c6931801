"""Session 20 (issues #4, #5): the new defaults against the old code paths, for ``benchmarks/src_variant_ab.py``.

- ``fp32_bwd`` (HSTU): the backward scores in fp32 (``JAGATTN_HSTU_PACKED_BWD=0``) against the packed bf16x2
  backward (``mask._silu_a_ds_bf16x2``), which the default now takes on the suite rows (mean length >= 256).
- ``dq_ptr`` (attention): the dQ kernel's K/V through pointer loads (``JAGATTN_ATTN_DQ_TMA=0``) against its TMA
  descriptor loads.
- ``dkdv_desc`` (attention): q / dO of the dK/dV loop through TMA descriptors over the packed ``[T, Hq * D]``
  view with the sequence's end as the row bound (rows past it read zeros; the clamped pointer rows gave the last
  row, and both get p = ds = 0 from the padding rows' lse2 = +inf: bitwise the same gradients expected). Head
  dim == its block and contiguous heads only (the suite rows). Session 14 measured a version of this on the
  H200 before session 16's q^T pointer tile: -4% to +11% by row.
- ``dkdv_ptr`` (attention, round 4): once adopted (``bwd.dkdv_use_tma``), the pointer loads as the variant.
- prepared for session 21 (the mean-8192 rows, the only ones on the long-keys dK/dV tile): ``no_long`` runs them
  like the shorter rows (``LONG_KEYS_MIN`` out of reach: the 64x64 4-warp tile, now with the TMA q/dO loads that
  gave the shorter rows 8-13%, and the head-major grid with GQA); ``no_long_rows`` the same with the slot-major
  grid; ``tma_long`` the 64x128 long tile with the TMA loads (round 4: 0.99-1.00x, the control).
- ``hstu_ptr`` (HSTU, round 6): the dK/dV kernel's masked pointer loads of q / dO against its TMA descriptor
  loads (``hstu.triton.bwd.hstu_bwd_tma``).
"""

import importlib


def _set(module, name, value):
    saved = []

    def enter():
        m = importlib.import_module(module)
        saved[:] = [getattr(m, name)]
        setattr(m, name, value)

    def leave():
        setattr(importlib.import_module(module), name, saved[0])

    return (enter, leave)


_B = "jagattn.attention.triton.bwd"
_DKDV_DESC = [
    (
        _B,
        "_attention_bwd_dkdv_kernel",
        "dk, dv, b_k, b_v, Q, DO, LSE2, DELTA, DQ_ACC, m_start,",
        "dk, dv, b_k, b_v,"
        " tl.make_tensor_descriptor(Q, shape=[bos_q + lq, stride_qt], strides=[stride_qt, 1],"
        " block_shape=[BLOCK_M, BLOCK_D]),"
        " tl.make_tensor_descriptor(DO, shape=[bos_q + lq, stride_dot], strides=[stride_dot, 1],"
        " block_shape=[BLOCK_M, BLOCK_DV]),"
        " LSE2, DELTA, DQ_ACC, m_start,",
    ),
    (
        _B,
        "_attention_bwd_dkdv_inner",
        """        b_qT = _load_tile(
            Q + rows[None, :] * stride_qt + i_h * stride_qh + o_d[:, None], o_d < D, m_m, BLOCK_D != D, False
        )""",
        "        b_qT = tl.trans(Q.load([bos_q + m0, i_h * stride_qh]))",
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


def _env(name, value):
    import os

    saved = []

    def enter():
        saved[:] = [os.environ.get(name)]
        os.environ[name] = value

    def leave():
        if saved[0] is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = saved[0]

    return (enter, leave)


def _tma_on_long_keys():
    bwd = importlib.import_module(_B)
    saved = []

    def enter():
        saved[:] = [bwd.dkdv_use_tma]
        real = saved[0]
        # (session 21: dkdv_use_tma no longer takes long_keys, and the TMA loads now retire the long tile: this
        # variant is s21_variants.long_tma there)
        bwd.dkdv_use_tma = lambda q, do, d, dv, bd, bdv, *_long_keys: real(q, do, d, dv, bd, bdv)

    def leave():
        bwd.dkdv_use_tma = saved[0]

    return (enter, leave)


VARIANTS = {
    "fp32_bwd": [_set("jagattn.hstu.triton.fwd", "PACKED_BWD", "0")],
    "dq_ptr": [_set("jagattn.attention.triton.bwd", "DQ_TMA", "0")],
    "dkdv_desc": _DKDV_DESC,
    # after round 3 the TMA q/dO loads became the default (bwd.dkdv_use_tma): the pointer loads as the variant
    "dkdv_ptr": [_set("jagattn.attention.triton.bwd", "DKDV_TMA", "0")],
    # round 6: the HSTU dK/dV loop's q/dO through TMA descriptors (bwd.hstu_bwd_tma): its pointer loads
    "hstu_ptr": [_set("jagattn.hstu.triton.bwd", "BWD_TMA", "0")],
    "no_long": [_set(_B, "LONG_KEYS_MIN", 1 << 30)],
    "no_long_rows": [_set(_B, "LONG_KEYS_MIN", 1 << 30), _env("JAGATTN_ATTN_HEAD_MAJOR", "0")],
    "tma_long": [_tma_on_long_keys()],
}
