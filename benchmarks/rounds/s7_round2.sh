# Prepared in session 6 for session 7's second device call (kind nvidia-h200, timeout_s 400): the gpu tests
# of attention + export (last full run: 17 passed, 1 skipped at 3a7f8d6) and HSTU (15 passed at eae99c1),
# and the gated delta gk tests; every test with JAGATTN_AUTOTUNE=0, summaries kept on a cut (-s INT).
set -o pipefail
export PYTHONUNBUFFERED=1
T0=$SECONDS
mkdir -p $OUT
JAGATTN_AUTOTUNE=0 PYTHONPATH="$PWD/src" timeout -s INT 170 python3 -m pytest -q -m gpu tests/test_attention_triton.py \
  tests/test_export.py -p no:cacheprovider --durations=5 2>&1 | tee $OUT/attention_export.log | tail -8
echo "== t=$((SECONDS-T0)) hstu"
JAGATTN_AUTOTUNE=0 PYTHONPATH="$PWD/src" timeout -s INT 160 python3 -m pytest -q -m gpu tests/test_hstu_triton.py \
  -p no:cacheprovider --durations=5 2>&1 | tee $OUT/hstu.log | tail -6
echo "== t=$((SECONDS-T0)) gk"
PYTHONPATH="$PWD/src" timeout -s INT $((385 - (SECONDS-T0))) python3 -m pytest -q -m gpu tests/test_gated_delta_gk.py \
  -p no:cacheprovider --durations=5 2>&1 | tee $OUT/gk.log | tail -6
echo "== t=$((SECONDS-T0)) done"
