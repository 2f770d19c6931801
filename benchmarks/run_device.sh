#!/usr/bin/env bash
# One benchmark run on the GPU machine, from the repository root (see benchmarks/README.md).
# Carry the ignored folders .whl (the fla-core wheel) and peers (peers/gr: generative-recommenders'
# Triton HSTU files); both are optional: a missing peer is reported "n/a (reason)".
# Arguments go to `python -m jagattn bench`; outputs land in $OUT (bench.json, bench.png, log.txt, env.txt).
set -uo pipefail
OUT=${OUT:-$PWD/.device-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
if compgen -G ".whl/*.whl" >/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    || echo "wheel install failed; FLA will be n/a" >&2
fi
export PYTHONPATH="$PWD/src:/tmp/site:$PWD/peers/gr${PYTHONPATH:+:$PYTHONPATH}"
{
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw --format=csv
  python3 -m jagattn info
} >"$OUT/env.txt" 2>&1
python3 -m jagattn bench "$@" --json "$OUT/bench.json" --plot "$OUT/bench.png" 2>&1 | tee "$OUT/log.txt"
exit "${PIPESTATUS[0]}"
