#!/usr/bin/env bash
# One gated delta device round for the opt-in backward variants (issue 6; never run yet), from the
# repository root, carrying `.whl` (the fla-core wheel, optional: FLA is then "n/a"), kind nvidia-h200:
#   (a) pytest -m gpu on the variants: every variant forced by the test fixture (bf16 K=V=128, 8192
#       tokens, SPEC rule + bitwise repeat) and the keep-T ops' opcheck;
#   (b) per variant, in its own process with the variant forced by its environment variables: errors
#       against the fp32 token loop divided by the default's (pass <= 1.5, max and rms), bitwise repeats
#       on a 16-head 8 x 4096 batch, max difference to the default's outputs;
#   (c) the same process: per-kernel CUDA time of the backward (H16 8 x 4096) and every BENCHMARKS.md
#       row (fwd, bwd, peak), FLA 0.6.0 in the default's process; summary.txt has the ratios.
# LIMIT (default 520) seconds in all; every step has its own `timeout`; SKIP_TESTS=1 leaves out (a).
# Logs and JSON land in $OUT.
# Run: JAGATTN_GIT_SHA=<sha> bash benchmarks/gated_delta_next_round.sh
set -uo pipefail
OUT=${OUT:-$PWD/.device-out}
LIMIT=${LIMIT:-520}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONWARNINGS=ignore
if compgen -G ".whl/*.whl" >/dev/null; then
  timeout 60 python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
    .whl/*.whl || echo "wheel install failed; FLA will be n/a" >&2
fi
export PYTHONPATH="$PWD/src:/tmp/site${PYTHONPATH:+:$PYTHONPATH}"
unset JAGATTN_GD_CONFIG JAGATTN_GD_SAVE_T JAGATTN_GD_KKT
{
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
  echo "git sha (of the tree copied here): ${JAGATTN_GIT_SHA:-unknown}"
} 2>&1 | tee "$OUT/env.txt"
left() { echo $((LIMIT - SECONDS)); }

if [ -z "${SKIP_TESTS:-}" ]; then
echo "== (a) gpu tests of the variants ($(left) s left)" | tee -a "$OUT/log"
timeout 150 python3 -m pytest tests/test_gated_delta_triton.py -m gpu -q -x -rA -p no:cacheprovider \
  -k "opt_in_variant or opcheck_keep_t" 2>&1 | tee "$OUT/pytest.log"
echo "pytest rc=${PIPESTATUS[0]}" | tee -a "$OUT/log"
fi

# name | (unused since session 5) | CONFIG | SAVE_T ; the default first (its process also times FLA and saves the
# reference outputs for the others)
VARIANTS=(
  "default|||"
  "wy-stages2||bwd_wy=64,4,2|"
  "dqkwg-stages1||bwd_dqkwg=32,4,1,128|"
  "save-t-fp32|||fp32"
  "save-t-input|||input"
)
for spec in "${VARIANTS[@]}"; do
  IFS='|' read -r name wy cfg savet <<<"$spec"
  budget=$(( $(left) - 15 ))
  if [ "$budget" -lt 30 ]; then echo "SKIP $name: $(left) s left" | tee -a "$OUT/log"; continue; fi
  per=$(( budget < 75 ? budget : 75 ))
  extra=""
  [ "$name" = "default" ] && extra="--fla" && per=$(( budget < 110 ? budget : 110 ))
  echo "== (b,c) $name CONFIG=$cfg SAVE_T=$savet (limit $per s, $(left) s left)" | tee -a "$OUT/log"
  JAGATTN_GD_CONFIG=$cfg JAGATTN_GD_SAVE_T=$savet \
    timeout "$per" python3 benchmarks/gated_delta_variants.py --name "$name" --out "$OUT" --scratch /tmp $extra \
    2>&1 | tee -a "$OUT/variant-$name.log" | grep -v '^ ' | cut -c1-400
  echo "$name rc=${PIPESTATUS[0]}" | tee -a "$OUT/log"
done
python3 benchmarks/gated_delta_variants.py --summary --out "$OUT" 2>&1 | tee -a "$OUT/log"
echo "done in $SECONDS s" | tee -a "$OUT/log"
