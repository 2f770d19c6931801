"""Run the ``gpu``-marked tests (or those of ``-m EXPR``) of some test files in several pytest processes at once on the device.

The gated delta gpu tests spend most of their time in the recurrent reference (a Python loop over 32k
tokens, host-bound), so one process cannot finish them inside one device call; N processes sharing the
one GPU can. Test ids are collected once and dealt round-robin in file order (the production cases come
first in each file, so they spread over the workers).

    PYTHONPATH=src python3 benchmarks/gpu_tests_parallel.py --workers 6 --timeout 420 --out $OUT \
        tests/test_gated_delta_triton.py tests/test_gated_delta_gk.py tests/test_hstu_triton.py

Memory: every worker is a separate PyTorch process with its own allocator cache. Session 36 ran 8 workers over the
attention / HSTU / gk / export / fp32-route modules on a 140 GB H200 and lost 25 of 106 tests to "out of memory";
``tests/conftest.py`` now empties the cache after each test, and 4-6 workers are what has worked for those modules.

Writes ``$OUT/gpu_tests_w<i>.log`` per worker and prints each worker's summary line; exits 1 when a worker
failed or did not finish in ``--timeout`` seconds.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("files", nargs="+")
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--timeout", type=float, default=420.0)
    ap.add_argument("--out", default=".")
    ap.add_argument("-k", default="", help="pytest -k expression applied when collecting")
    ap.add_argument(
        "-m", dest="marker", default="gpu", help='pytest -m expression ("not gpu": the CPU tests on cuda)'
    )
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-m",
        args.marker,
        "--collect-only",
        "-p",
        "no:cacheprovider",
        *args.files,
    ]
    if args.k:
        cmd += ["-k", args.k]
    listing = subprocess.run(cmd, capture_output=True, text=True, check=False).stdout
    ids = [line.strip() for line in listing.splitlines() if "::" in line and not line.startswith(" ")]
    if not ids:
        print(listing[-2000:])
        print(f"no tests collected (-m {args.marker!r})")
        return 1
    groups = [ids[i :: args.workers] for i in range(args.workers)]
    groups = [g for g in groups if g]
    print(f"{len(ids)} tests (-m {args.marker!r}) over {len(groups)} workers", flush=True)
    t0 = time.monotonic()
    procs = []
    for i, g in enumerate(groups):
        log = open(os.path.join(args.out, f"gpu_tests_w{i}.log"), "w")  # noqa: SIM115 (closed below)
        # -v: one line per test as it ends, so a worker cut by the timeout still names its failures and what it
        # did not reach (session 54 recovered them from the collection order)
        run = [
            sys.executable,
            "-m",
            "pytest",
            "-v",
            "--tb=short",
            "-rfE",
            "-p",
            "no:cacheprovider",
            "--durations=3",
            *g,
        ]
        procs.append((subprocess.Popen(run, stdout=log, stderr=subprocess.STDOUT), log, g))
    failed = False
    for i, (p, log, g) in enumerate(procs):
        left = max(1.0, args.timeout - (time.monotonic() - t0))
        try:
            rc = p.wait(timeout=left)
        except subprocess.TimeoutExpired:
            p.kill()
            rc = None
        log.close()
        with open(log.name) as f:
            text = f.read().splitlines()
        summary = next(
            (s for s in reversed(text) if any(w in s for w in (" passed", " failed", " error", " skipped"))),
            "",
        )
        if rc is None:
            ended = {}
            for s in text:
                head, _, rest = s.partition(" ")
                if "::" in head and rest.startswith(
                    ("PASSED", "FAILED", "ERROR", "SKIPPED", "XFAIL", "XPASS")
                ):
                    ended[head] = rest.split()[0]
            left = [t for t in g if t not in ended]
            print(
                f"worker {i}: TIMEOUT after {args.timeout:.0f} s; {len(g)} tests, {len(ended)} ended, {len(left)} not"
            )
            for t, how in ended.items():
                if how in ("FAILED", "ERROR"):
                    print(f"    {how} {t} (cut before pytest's summary: see the log)")
            with open(os.path.join(args.out, f"gpu_tests_w{i}_not_run.txt"), "w") as f:
                f.write("".join(t + "\n" for t in left))
            failed = True
        else:
            print(f"worker {i}: rc={rc} {summary.strip()}  ({time.monotonic() - t0:.0f} s)")
            failed |= rc != 0
        for s in text:
            if s.startswith(("FAILED", "ERROR")):
                print("   ", s[:300])
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
