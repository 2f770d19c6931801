"""Prepared in session 17, not run (no device time left): fewer integer instructions per step of the attention
dK/dV loop, for ``benchmarks/src_variant_ab.py`` (bf16 suite rows; outputs must stay bitwise the same).

After session 17's lse2/delta change the loop executes ~544 instructions per warp and step (Nsight Compute,
round 6), 96 of them IMAD: ~20 for ``it // n_blocks`` (the flat (head, block) loop's integer division) and ~8 per
q / do row pointer (64-bit ``rows * stride`` products and adds, 8 row pointers per thread).

- ``i32rows``: row offsets in int32 (``rows.to(tl.int32)``). Only valid while every offset fits in int32
  (q and do under 2^31 elements: true on every suite row); a real change would pick it by a constexpr set from
  the host (tensor sizes), like ``I64`` flags elsewhere.
- ``nodiv``: the (head, block) pair carried across steps (block += 1, wrap to the next head) instead of
  recomputed with a division each step.
- ``both``.

Local Triton 3.6 compile (``compile_check.py --ttgir``; static SASS of the main loop of the 64x128 / 8-warp /
3-stage config, default 683 instructions, 255 registers, 48 bytes of stack): ``i32rows`` 657 (IMAD 96 -> 86) but
56 bytes of stack and 5 spill loads (LDL) inside the loop; ``nodiv`` 773 (the carried pair becomes vector
selects and the pipeliner's address chains grow), stack 24; ``both`` 746, stack 16. Neither is a clear static
win: low priority for device time.
"""

_A = "jagattn.attention.triton.bwd"
_F = "_attention_bwd_dkdv_inner"

_I32 = (
    _A,
    _F,
    "        rows = (bos_q + tl.minimum(o_m, lq - 1)).to(tl.int64)\n",
    "        rows = (bos_q + tl.minimum(o_m, lq - 1)).to(tl.int32)\n",
)
_NODIV = [
    (
        _A,
        _F,
        "    for it in range(0, GROUP * n_blocks):\n"
        "        i_g = it // n_blocks\n"
        "        i_h = i_hk * GROUP + i_g\n"
        "        m0 = tl.multiple_of(m_lo + (it - i_g * n_blocks) * BLOCK_M, BLOCK_M)\n",
        "    m0 = m_lo\n"
        "    i_h = i_hk * GROUP\n"
        "    for it in range(0, GROUP * n_blocks):\n"
        "        m0 = tl.multiple_of(m0, BLOCK_M)\n",
    ),
    (
        _A,
        _F,
        '                tl.atomic_add(p_dq, b_dq, mask=m_m[:, None] & (o_d < D)[None, :], sem="relaxed")\n'
        "    return dk, dv\n",
        '                tl.atomic_add(p_dq, b_dq, mask=m_m[:, None] & (o_d < D)[None, :], sem="relaxed")\n'
        "        m0 += BLOCK_M\n"
        "        wrap = m0 >= m_hi\n"
        "        i_h = tl.where(wrap, i_h + 1, i_h)\n"
        "        m0 = tl.where(wrap, m_lo, m0)\n"
        "    return dk, dv\n",
    ),
]

VARIANTS = {
    "i32rows": [_I32],
    "nodiv": _NODIV,
    "both": [_I32, *_NODIV],
}
