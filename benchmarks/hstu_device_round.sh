#!/usr/bin/env bash
# One HSTU device round (issue 5, session 3), from the repository root, `peers` carried:
#   1. jagattn's Triton HSTU on the 5 hstu rows, both dQ paths (atomic / dQ kernel): fwd, fwd+bwd,
#      peak memory, correctness (benchmarks/hstu_triton.py --quick --no-gr, first-listed configs);
#   2. which of GR's autotune configs crash or miscompute (benchmarks/hstu_gr_probe.py);
#   3. GR alone on the 5 rows with those configs excluded (hstu_triton.py --gr-only).
# Everything lands in $OUT; every step has its own time limit inside LIMIT seconds (default 205).
set -uo pipefail
OUT=${OUT:-$PWD/.device-out}
LIMIT=${LIMIT:-205}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONWARNINGS=ignore JAGATTN_HSTU_AUTOTUNE=0
export PYTHONPATH="$PWD/src:$PWD/peers/gr"
export JAGATTN_GR_COMMIT=$(cat peers/gr/COMMIT 2>/dev/null)
{
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv
  python3 -c "import torch, triton; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'triton', triton.__version__)"
  echo "git sha (of the tree copied here): ${JAGATTN_GIT_SHA:-unknown}; GR ${JAGATTN_GR_COMMIT}"
} >"$OUT/env.txt" 2>&1
cat "$OUT/env.txt"
left() { echo $((LIMIT - SECONDS)); }

echo "== 1. ours, both dQ paths ($(left) s left)"
timeout 60 python3 benchmarks/hstu_triton.py --quick --no-gr --warmup 10 --rep 50 2>&1 | tee "$OUT/ours.log"
cp "$OUT/hstu_bench.json" "$OUT/ours.json" 2>/dev/null

echo "== 2. GR config probe ($(left) s left)"
timeout $(( $(left) - 45 )) python3 benchmarks/hstu_gr_probe.py --jobs 16 --child-timeout 55 --deadline 45 \
  --default-timeout 30 --default-skip-after 75 2>&1 | tee "$OUT/probe.log"
EX=$(grep '^EXCLUDE=' "$OUT/probe.log" | tail -1 | cut -d= -f2-)
if ! grep -q '^EXCLUDE=' "$OUT/probe.log"; then
  EX=$(python3 -c "import json; print(','.join(r['config'] for r in json.load(open('$OUT/gr_probe_partial.json')) if r['outcome'] not in ('ok', 'skipped')))" 2>/dev/null)
  echo "probe cut off: excluding from its partial results: $EX"
fi

echo "== 3. GR alone, JAGATTN_GR_EXCLUDE=$EX ($(left) s left)"
JAGATTN_GR_EXCLUDE="$EX" timeout $(( $(left) - 3 )) python3 benchmarks/hstu_triton.py --gr-only --warmup 10 --rep 50 \
  2>&1 | tee "$OUT/gr.log"
echo "done in $SECONDS s"
