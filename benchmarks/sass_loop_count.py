"""Static instruction counts of a kernel's main loop from the SASS files ``compile_check.py --ttgir DIR`` writes.

For each ``.sass`` file: the largest backward-branching loop that contains ``HGMMA`` (the software-pipelined main
loop), its static instruction count, the size of the forward-branch region inside it (the run-time ``masked``
branch of the HSTU / attention loops: taken only by edge blocks), the count without that region (what an unmasked
step issues per warp), and the opcode histogram of that path. A lead for comparing code variants on a machine
without a GPU (session 19: the HSTU address arithmetic and edge-mask changes were sized this way before timing).

    PYTHONPATH=src .venv/bin/python benchmarks/compile_check.py --family hstu --len 1024 --ttgir /tmp/cc
    python3 benchmarks/sass_loop_count.py /tmp/cc/L1__hstu_bwd_kernel_*w8s3.sass [--top 12]
"""

from __future__ import annotations

import argparse
import collections
import re

_LINE = re.compile(r"\s*/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;")
_TARGET = re.compile(r"BRA\b.*?0x([0-9a-f]+)")


def instructions(path: str) -> list[tuple[int, str]]:
    out = []
    with open(path) as f:
        for line in f:
            m = _LINE.match(line)
            if m:
                out.append((int(m.group(1), 16), m.group(2)))
    return out


def main_loop(ins: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """The largest ``[target, branch]`` range of a backward branch that holds an ``HGMMA``."""
    index = {a: i for i, (a, _) in enumerate(ins)}
    best: list[tuple[int, str]] = []
    for i, (a, s) in enumerate(ins):
        m = _TARGET.search(s)
        if m and int(m.group(1), 16) < a and int(m.group(1), 16) in index:
            body = ins[index[int(m.group(1), 16)] : i + 1]
            if any("HGMMA" in x for _, x in body) and len(body) > len(best):
                best = body
    return best


def opcode(s: str) -> str:
    return re.sub(r"^@!?U?P\w+\s+", "", s).split(" ")[0].split(".")[0]


def report(path: str, top: int) -> None:
    body = main_loop(instructions(path))
    if not body:
        print(f"{path}: no HGMMA loop found")
        return
    addr = [a for a, _ in body]
    branch = (0, 0)  # the largest forward branch inside the loop
    for i, (a, s) in enumerate(body):
        m = _TARGET.search(s)
        if m and int(m.group(1), 16) > a and int(m.group(1), 16) in addr:
            j = addr.index(int(m.group(1), 16))
            if j - i > branch[1] - branch[0]:
                branch = (i, j)
    path_ins = [s for k, (_, s) in enumerate(body) if not branch[0] < k < branch[1]]
    hist = collections.Counter(opcode(s) for s in path_ins)
    skipped = max(branch[1] - branch[0] - 1, 0)
    print(
        f"{path.rsplit('/', 1)[-1]}: loop {len(body)}, forward-branch region {skipped}, without it {len(path_ins)}"
    )
    print("    " + " ".join(f"{op}:{n}" for op, n in hist.most_common(top)))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("sass", nargs="+")
    ap.add_argument("--top", type=int, default=16)
    args = ap.parse_args()
    for path in args.sass:
        report(path, args.top)


if __name__ == "__main__":
    main()
