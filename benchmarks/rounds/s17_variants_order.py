"""Session 17: launch orders of the attention backward, for ``benchmarks/src_variant_ab.py`` (bf16 suite rows).

No source change, only the per-call switches of ``attention/triton/bwd.py``:

- ``hm``: dK/dV grid head-major (``JAGATTN_ATTN_HEAD_MAJOR=1``) on every row; the default uses it only with GQA
  below ``LONG_KEYS_MIN`` keys, so the mean-8192 Hkv 4 row (long keys, GQA) launches sequence-major. A
  list-scheduling model of the suite rows (132 SMs, work = visible query blocks x group) puts that row's
  dK/dV span at 1.15x its even share sequence-major and 1.02x head-major;
- ``nohm``: head-major off everywhere (the GQA rows below 4096 keys);
- ``dqhf``: dQ grid with the heads fastest (``JAGATTN_ATTN_DQ_HEAD_FAST=1``; model: 1.03-1.05x -> 1.00-1.02x). That
  switch existed only at commit 04af594 (round 2: within noise, then removed): on later trees the variant runs
  the default;
- ``hm_dqhf``: both.
"""

import os


def _env(**values):
    saved = {}

    def enter():
        for k, v in values.items():
            saved[k] = os.environ.get(k)
            os.environ[k] = v

    def leave():
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v

    return [(enter, leave)]


VARIANTS = {
    "hm": _env(JAGATTN_ATTN_HEAD_MAJOR="1"),
    "nohm": _env(JAGATTN_ATTN_HEAD_MAJOR="0"),
    "dqhf": _env(JAGATTN_ATTN_DQ_HEAD_FAST="1"),
    "hm_dqhf": _env(JAGATTN_ATTN_HEAD_MAJOR="1", JAGATTN_ATTN_DQ_HEAD_FAST="1"),
}
