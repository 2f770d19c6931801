"""The benchmark suites of BENCHMARKS.md as data: one :class:`Row` per suite row, seeded lengths.

A row is pure description (family, shapes, flags, how its lengths are drawn); ``cases.py``
turns it into tensors. Every row has its own seed derived from its name, so a row's batch is
the same whichever suite or family selection it runs in.

Suites:

- ``default``: the rows of BENCHMARKS.md for the family (bf16 unless ``--dtype`` says otherwise).
- ``smoke``: tiny shapes that run on a CPU in seconds (reference backend, Triton interpreter).
- a row name (or a comma list of them, optionally written ``family/row``): just those rows.
"""

from __future__ import annotations

import dataclasses
import math
import random
import zlib
from collections.abc import Sequence
from typing import Any

FAMILIES = ("attention", "hstu", "gated_delta")
SUITES = ("default", "smoke")


@dataclasses.dataclass(frozen=True)
class Row:
    """One suite row: a family, a name, its shape parameters and how its lengths are drawn.

    ``lengths`` is a ``(kind, params)`` pair understood by :func:`draw_lengths`; ``params`` holds
    the family's shape and flag parameters (head counts, dims, causal, window, targets, ...).
    """

    family: str
    name: str
    lengths: tuple[str, dict[str, Any]]
    params: dict[str, Any]
    about: str = ""

    @property
    def seed(self) -> int:
        return zlib.crc32(f"{self.family}/{self.name}".encode())

    @property
    def key(self) -> str:
        return f"{self.family}/{self.name}"


# ---------------------------------------------------------------------------------------------
# lengths


def draw_lengths(kind: str, params: dict[str, Any], seed: int) -> list[int]:
    """Sequence lengths of one row, deterministic in ``seed``.

    Kinds:
      - ``fill_uniform(total, lo, hi)``: lengths uniform in ``[lo, hi]`` until they sum to exactly
        ``total`` (a remainder shorter than ``lo`` is spread over the sequences, never beyond ``hi``
        unless it cannot fit otherwise).
      - ``fill_skewed(total, short=(a, b), long=(c, d), p_short)``: each sequence is short with
        probability ``p_short``, else long; filled to exactly ``total`` like above.
      - ``equal(total, n)``: ``n`` sequences of ``total // n`` (the first ``total % n`` one longer).
      - ``count_uniform(n, lo, hi)``: ``n`` lengths uniform in ``[lo, hi]``.
      - ``count_lognormal(n, median, sigma, lo, hi)``: ``n`` lognormal lengths clipped to ``[lo, hi]``.
      - ``explicit(lengths)``: the given list.
    """
    rng = random.Random(seed)
    if kind == "fill_uniform":
        return _fill(
            params["total"], lambda: rng.randint(params["lo"], params["hi"]), params["lo"], params["hi"]
        )
    if kind == "fill_skewed":
        a, b = params["short"]
        c, d = params["long"]
        p_short = params["p_short"]

        def draw() -> int:
            return rng.randint(a, b) if rng.random() < p_short else rng.randint(c, d)

        out = _fill(params["total"], draw, a, d)
        rng.shuffle(out)
        return out
    if kind == "equal":
        total, n = params["total"], params["n"]
        return [total // n + (1 if i < total % n else 0) for i in range(n)]
    if kind == "count_uniform":
        return [rng.randint(params["lo"], params["hi"]) for _ in range(params["n"])]
    if kind == "count_lognormal":
        mu = math.log(params["median"])
        return [
            min(params["hi"], max(params["lo"], round(rng.lognormvariate(mu, params["sigma"]))))
            for _ in range(params["n"])
        ]
    if kind == "explicit":
        return list(params["lengths"])
    raise ValueError(f"lengths: unknown kind {kind!r}")


def _fill(total: int, draw, lo: int, hi: int) -> list[int]:
    out: list[int] = []
    acc = 0
    while True:
        n = draw()
        if acc + n > total:
            break
        out.append(n)
        acc += n
    rem = total - acc
    if rem >= lo or not out:
        if rem:
            out.append(rem)
        return out
    # Spread the short remainder one token at a time over sequences that stay within hi.
    i = 0
    guard = 0
    while rem:
        if out[i % len(out)] < hi or guard >= len(out):
            out[i % len(out)] += 1
            rem -= 1
            guard = 0
        else:
            guard += 1
        i += 1
    return out


def describe_lengths(lengths: Sequence[int]) -> str:
    """``20seqs T=32768 [296..571] avg=409``."""
    if not lengths:
        return "0seqs T=0"
    t = sum(lengths)
    return f"{len(lengths)}seqs T={t} [{min(lengths)}..{max(lengths)}] avg={t / len(lengths):.0f}"


# ---------------------------------------------------------------------------------------------
# the rows of BENCHMARKS.md

_ATT_T = 32768


def _attention_rows() -> list[Row]:
    rows = []
    for mean in (512, 2048, 8192):
        for hkv in (16, 4):
            rows.append(
                Row(
                    "attention",
                    f"causal-mean{mean}-hkv{hkv}",
                    ("fill_uniform", {"total": _ATT_T, "lo": mean // 2, "hi": 3 * mean // 2}),
                    {"hq": 16, "hkv": hkv, "d": 128, "dv": 128, "causal": True, "window": (-1, -1)},
                    f"causal, lengths uniform in [{mean // 2}, {3 * mean // 2}]",
                )
            )
    rows.append(
        Row(
            "attention",
            "skewed",
            ("fill_skewed", {"total": _ATT_T, "short": (64, 256), "long": (4096, 8192), "p_short": 0.9}),
            {"hq": 16, "hkv": 16, "d": 128, "dv": 128, "causal": True, "window": (-1, -1)},
            "causal, 90% of sequences 64..256, the rest 4096..8192",
        )
    )
    rows.append(
        Row(
            "attention",
            "noncausal-mean2048",
            ("fill_uniform", {"total": _ATT_T, "lo": 1024, "hi": 3072}),
            {"hq": 16, "hkv": 16, "d": 128, "dv": 128, "causal": False, "window": (-1, -1)},
            "non-causal, lengths uniform in [1024, 3072]",
        )
    )
    rows.append(
        Row(
            "attention",
            "window1024-mean8192",
            ("fill_uniform", {"total": _ATT_T, "lo": 4096, "hi": 12288}),
            {"hq": 16, "hkv": 16, "d": 128, "dv": 128, "causal": True, "window": (1024, 0)},
            "causal sliding window left=1024, lengths uniform in [4096, 12288]",
        )
    )
    return rows


def _hstu_rows() -> list[Row]:
    base = {
        "h": 4,
        "dq": 128,
        "dv": 128,
        "alpha": 1.0 / 128,
        "targets": (1, 20),
        "contextual": 0,
        "window": 0,
    }
    rows = []
    for b, n in ((256, 1024), (128, 2048), (64, 4096)):
        rows.append(
            Row(
                "hstu",
                f"B{b}-N{n}",
                ("count_uniform", {"n": b, "lo": (9 * n + 9) // 10, "hi": n - 1}),
                {**base, "max_seq_len": n},
                f"lengths uniform in [0.9N, N), num_targets uniform 1..20, max_seq_len=N={n}",
            )
        )
    rows.append(
        Row(
            "hstu",
            "recsys",
            ("count_lognormal", {"n": 128, "median": 2048 // 8, "sigma": 1.0, "lo": 2, "hi": 2048}),
            {**base, "max_seq_len": 2048},
            "B=128 N=2048, lognormal lengths (median N/8, sigma 1) capped at N, num_targets 1..20",
        )
    )
    rows.append(
        Row(
            "hstu",
            "ctx6-w256",
            ("count_uniform", {"n": 128, "lo": (9 * 2048 + 9) // 10, "hi": 2047}),
            {**base, "max_seq_len": 2048, "contextual": 6, "window": 256},
            "B=128 N=2048, contextual C=6, window W=256, num_targets 1..20",
        )
    )
    return rows


def _gated_delta_rows() -> list[Row]:
    base = {"k": 128, "v": 128}
    return [
        Row("gated_delta", "H16-8seqs", ("equal", {"total": 32768, "n": 8}), {**base, "h": 16, "hv": 16}),
        Row("gated_delta", "H32-8seqs", ("equal", {"total": 32768, "n": 8}), {**base, "h": 32, "hv": 32}),
        Row("gated_delta", "H16-64seqs", ("equal", {"total": 32768, "n": 64}), {**base, "h": 16, "hv": 16}),
        Row("gated_delta", "H16-1seq", ("equal", {"total": 32768, "n": 1}), {**base, "h": 16, "hv": 16}),
        Row(
            "gated_delta",
            "H16-ragged",
            ("fill_uniform", {"total": 32768, "lo": 100, "hi": 8000}),
            {**base, "h": 16, "hv": 16},
            "lengths uniform in [100, 8000]",
        ),
    ]


def _smoke_rows() -> list[Row]:
    return [
        Row(
            "attention",
            "smoke-causal-gqa",
            ("explicit", {"lengths": [37, 1, 64, 19]}),
            {"hq": 4, "hkv": 2, "d": 32, "dv": 32, "causal": True, "window": (-1, -1)},
        ),
        Row(
            "attention",
            "smoke-window",
            ("explicit", {"lengths": [48, 17, 33]}),
            {"hq": 2, "hkv": 2, "d": 16, "dv": 32, "causal": True, "window": (8, 0)},
        ),
        Row(
            "hstu",
            "smoke-targets",
            ("explicit", {"lengths": [40, 9, 63, 24]}),
            {
                "h": 2,
                "dq": 32,
                "dv": 16,
                "alpha": 1.0 / 32,
                "targets": (1, 5),
                "contextual": 2,
                "window": 16,
                "max_seq_len": 64,
            },
        ),
        Row(
            "gated_delta",
            "smoke-gdn",
            ("explicit", {"lengths": [29, 70, 1, 40]}),
            {"k": 32, "v": 16, "h": 2, "hv": 4},
        ),
    ]


def all_rows(suite: str = "default") -> list[Row]:
    if suite == "smoke":
        return _smoke_rows()
    return _attention_rows() + _hstu_rows() + _gated_delta_rows()


def select_rows(families: Sequence[str], suite: str) -> list[Row]:
    """The rows of ``suite`` (``default``, ``smoke``, or a comma list of row names) for ``families``.

    Raises:
        ValueError: an unknown family or row name, listing the known ones.
    """
    for fam in families:
        if fam not in FAMILIES:
            raise ValueError(f"family: unknown family {fam!r}; choose from {list(FAMILIES)} or 'all'")
    if suite in SUITES:
        return [r for r in all_rows(suite) if r.family in families]
    known = all_rows("default") + all_rows("smoke")
    out = []
    for name in (s.strip() for s in suite.split(",")):
        if not name:
            continue
        hits = [r for r in known if name in (r.name, r.key) and r.family in families]
        if not hits:
            names = ", ".join(r.key for r in known if r.family in families)
            raise ValueError(
                f"suite: {name!r} is neither 'default', 'smoke' nor a row of families {list(families)}; "
                f"rows: {names}"
            )
        out.extend(h for h in hits if h not in out)
    return out
