"""Session 19 round 9 variant for ``benchmarks/src_variant_ab.py --family attention`` (issue #4).

``lazy_rescale``: the forward's online softmax keeps its reference max while no row's max grows by more than 8
(log2 units; ``p <= 2^8`` then, exact in fp32 and bf16), so most steps skip the rescale of ``acc`` (one FMUL per
output element: 64 of ~590 instructions per 128x128 step in the local Triton 3.6 SASS) and of ``l``; when any row
of the tile grows past it, the whole tile rescales as before (a run-time branch on a block-wide reduction).
``o = acc / l`` and ``lse = m + log2 l`` stay exact relations to the kept max; results differ from the default
only by rounding.
"""

A = "jagattn.attention.triton.fwd"

VARIANTS = {
    "lazy_rescale": [
        (
            A,
            "_fwd_update",
            """    # a row with no visible key so far keeps m = -inf; shift by 0 so exp2 gives 0, not NaN
    m_use = tl.where(m_new == float("-inf"), 0.0, m_new)
    alpha = tl.math.exp2(m_i - m_use)
    l_i = l_i * alpha
    acc = acc * alpha[:, None]
""",
            """    # keep the reference max (no rescale of acc, l) unless a row's max grows by more than 8 (log2 units)
    if tl.max((m_new > m_i + 8.0).to(tl.int32), 0) > 0:
        # a row with no visible key so far keeps m = -inf; shift by 0 so exp2 gives 0, not NaN
        m_use = tl.where(m_new == float("-inf"), 0.0, m_new)
        alpha = tl.math.exp2(m_i - m_use)
        l_i = l_i * alpha
        acc = acc * alpha[:, None]
    else:
        m_new = m_i
        m_use = tl.where(m_i == float("-inf"), 0.0, m_i)
""",
        )
    ],
}
