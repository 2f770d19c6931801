"""Session 16: backward inner-loop orderings, for ``benchmarks/src_variant_ab.py`` (bf16 suite rows).

attention dK/dV (``_attention_bwd_dkdv_inner``), from reading FlexAttention's backward template (torch 2.13,
``flex_backwards.py.jinja``: same 64x128 / 8 warps / 3 stages tile on sm_90 for head dim 128):

- ``delta_late``: load the ``delta`` rows after the dV product (Flex's order), one row vector less live
  across the first two products;
- ``qT``: load q as a ``[D, BLOCK_M]`` tile through pointers (Flex's ``qT_ptrs``) instead of ``tl.trans`` of a
  ``[BLOCK_M, D]`` tile (head dim == its block only, as on the suite rows);
- ``both``: the two together;
- ``dp_early``: the dP^T product right after the S^T one (Triton 3.9's sm_90 compile of the 64x128/8-warp/3-stage
  tile: stack 96 -> 32 bytes, registers 255 both; each of the two products is still waited for at once);
- ``dp_early_late``: ``dp_early`` + ``delta_late``.

These apply to the source before commit 5b14b9a, which adopted ``both`` (they report "not applicable" after it).

HSTU dK/dV (``_hstu_bwd_tile``, bf16: fast sigmoid and score factors last):

- ``dv_first``: ``silu`` from the scores alone, the dV product, then ``dp`` and ``ds`` (the mask zeroes the
  ``silu`` tile and the ``ds`` factor ``r``), so the dP product is issued after the dV one and ``silu``'s tile
  dies before ``ds`` is formed.
"""

import importlib

_A = "jagattn.attention.triton.bwd"
_H = "jagattn.hstu.triton.bwd"

# the HSTU variant calls the tanh helper by name from bwd.py's globals
_hb = importlib.import_module(_H)
_hb._tanh_approx = importlib.import_module("jagattn.hstu.triton.mask")._tanh_approx

_F = "_attention_bwd_dkdv_inner"
_DP = "        dpT = tl.dot(b_v, tl.trans(b_do), input_precision=DOT_PREC)\n"
_ST = "        sT = tl.dot(b_k, tl.trans(b_q), input_precision=DOT_PREC)\n"
_DELTA = "        b_delta = tl.load(DELTA + i_h.to(tl.int64) * stride_lse_h + rows)\n"
_DELTA_LATE = [(_A, _F, _DELTA, ""), (_A, _F, _DP, _DELTA + _DP)]

_QT = [
    (
        _A,
        "_attention_bwd_dkdv_inner",
        """        b_q = _load_tile(
            Q + rows[:, None] * stride_qt + i_h * stride_qh + o_d[None, :], m_m, o_d < D, False, BLOCK_D != D
        )""",
        "        b_qT = tl.load(Q + rows[None, :] * stride_qt + i_h * stride_qh + o_d[:, None])",
    ),
    (
        _A,
        "_attention_bwd_dkdv_inner",
        "sT = tl.dot(b_k, tl.trans(b_q), input_precision=DOT_PREC)",
        "sT = tl.dot(b_k, b_qT, input_precision=DOT_PREC)",
    ),
    (_A, "_attention_bwd_dkdv_inner", "dsT = dsT.to(b_q.dtype)", "dsT = dsT.to(b_qT.dtype)"),
    (
        _A,
        "_attention_bwd_dkdv_inner",
        "dk = tl.dot(dsT, b_q, dk, input_precision=DOT_PREC)",
        "dk = tl.dot(dsT, tl.trans(b_qT), dk, input_precision=DOT_PREC)",
    ),
]

_DV_FIRST = [
    (
        _H,
        "_hstu_bwd_tile",
        """    b_dp = tl.dot(b_v, tl.trans(b_do), input_precision=PRECISION)  # [BN, BM] = <v_j, do_i>
    # silu(s) / S, alpha * ds_ij (SCALE_LAST: silu(s), alpha ds_ij / ds_scale; the kernel scales dk, dv)
    b_a, b_ds = _silu_a_ds(b_qk, b_dp, alpha, scale_a, FAST_SIGMOID, SCALE_LAST)
    if masked:  # edge blocks (a run-time branch in the one pipelined loop)
        b_a, b_ds = _zero_hidden_pair(
            b_a, b_ds, o_i, o_j, m_i, C, W, F, M, HAS_CTX, HAS_TARGETS, HAS_WINDOW, HAS_FULL
        )
    b_ds_lp = b_ds.to(b_q.dtype)
    dv = tl.dot(b_a.to(b_do.dtype), b_do, dv, input_precision=PRECISION)
""",
        """    h = b_qk * (0.5 * alpha)
    t = _tanh_approx(h)
    p = 1.0 + t
    b_a = h * p
    b_r = h * (1.0 - t * t) + p
    if masked:
        b_a, b_r = _zero_hidden_pair(b_a, b_r, o_i, o_j, m_i, C, W, F, M, HAS_CTX, HAS_TARGETS, HAS_WINDOW, HAS_FULL)
    dv = tl.dot(b_a.to(b_do.dtype), b_do, dv, input_precision=PRECISION)
    b_dp = tl.dot(b_v, tl.trans(b_do), input_precision=PRECISION)
    b_ds_lp = (b_dp * b_r).to(b_q.dtype)
""",
    ),
]

_DP_EARLY = [(_A, _F, _DP, ""), (_A, _F, _ST, _ST + _DP)]
_DP_EARLY_LATE = [(_A, _F, _DP, ""), (_A, _F, _DELTA, ""), (_A, _F, _ST, _ST + _DELTA + _DP)]

VARIANTS = {
    "dp_early": _DP_EARLY,
    "dp_early_late": _DP_EARLY_LATE,
    "delta_late": _DELTA_LATE,
    "qT": _QT,
    "both": _DELTA_LATE + _QT,
    "dv_first": _DV_FIRST,
}
