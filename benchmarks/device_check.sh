#!/usr/bin/env bash
# End-of-session check on the GPU machine (run through the device tool from the repo root):
#   bash benchmarks/device_check.sh tests        every `gpu` test of every family on the device's
#                                                Triton (one config per kernel), then the demo
#                                                and the host-overhead timing (op_overhead.py)
#   bash benchmarks/device_check.sh tests FILES  the `gpu` tests of those test files only (e.g.
#                                                tests/test_hstu_triton.py), then the demo: all
#                                                families' gpu tests no longer fit one 10-minute
#                                                call (session 3), so run them in a few calls
#   bash benchmarks/device_check.sh bench ARGS   benchmarks/run_device.sh ARGS (peers carried)
# Logs land in $OUT.
set -uo pipefail
OUT=${OUT:-$PWD/.device-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
mode=${1:-tests}
shift || true
case "$mode" in
  tests)
    python3 -m jagattn info >"$OUT/info.txt" 2>&1
    files=("$@")
    [ ${#files[@]} -gt 0 ] || files=(tests)
    JAGATTN_AUTOTUNE=0 timeout "${TEST_TIMEOUT:-420}" python3 -m pytest "${files[@]}" -m gpu -q -p no:cacheprovider -rfEs \
      2>&1 | tee "$OUT/gpu_tests.log"
    rc=${PIPESTATUS[0]}
    JAGATTN_AUTOTUNE=0 timeout 120 python3 -m jagattn demo 2>&1 | tee "$OUT/demo.log"
    if [ $# -eq 0 ]; then
      timeout 120 python3 benchmarks/op_overhead.py --json "$OUT/op_overhead.json" 2>&1 | tee "$OUT/op_overhead.log"
    fi
    exit "$rc"
    ;;
  bench)
    exec bash benchmarks/run_device.sh "$@"
    ;;
  *)
    echo "usage: $0 tests|bench [bench args]" >&2
    exit 2
    ;;
esac
