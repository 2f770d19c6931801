"""``jagattn bench``: the benchmark CLI (suites of BENCHMARKS.md, correctness gate, peers, report).

Entry point: :func:`jagattn.bench.cli.main` ``(argv) -> int``. Modules: ``suites`` (rows as data),
``cases`` (rows as tensors, calls of the public functions), ``flops`` (SPEC FLOP conventions),
``impls`` / ``peers`` (what is timed), ``harness`` (gate, timing, memory), ``report`` (table,
JSON, PNG), ``progress``.
"""
