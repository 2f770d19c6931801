# Prepared in session 6 for session 7's FIRST device call (kind nvidia-h200, carry .whl, timeout_s 590):
# session 6 landed gated delta changes that never ran on a GPU (86b9552: unused final state -> dht None,
# no dh0 without an initial state, T cast to bf16 before wy). (1) the gated delta rows with FLA in the same
# process: times and PEAK MEMORY (predicted H16-64seqs ~2.32 GB, H16-8seqs ~2.24 GB vs FLA 2.36) plus the
# per-kernel profile of H16-8seqs and H16-1seq; (2) the whole gated delta gpu test file (needs ~330 s cold).
# Call: JAGATTN_GIT_SHA=<full sha> bash benchmarks/rounds/s7_round1.sh
set -o pipefail
export PYTHONUNBUFFERED=1
T0=$SECONDS
mkdir -p $OUT/gd
timeout 60 python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  || echo "wheel install failed: FLA n/a"
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv
  python3 -c "import torch,triton;print(torch.__version__,triton.__version__)"; echo "sha $JAGATTN_GIT_SHA"; } | tee $OUT/env.txt
PYTHONPATH="$PWD/src:/tmp/site" timeout 200 python3 benchmarks/gated_delta_triton.py --out $OUT/gd --no-breakdown \
  --profile-rows H16-8seqs,H16-1seq 2>&1 | grep -v -i warn | tee $OUT/gd/bench.log | grep -v "^      0.00"
echo "== t=$((SECONDS-T0)) gated delta gpu tests"
PYTHONPATH="$PWD/src" timeout -s INT $((575 - (SECONDS-T0))) python3 -m pytest -q -m gpu tests/test_gated_delta_triton.py \
  -p no:cacheprovider --durations=10 2>&1 | tee $OUT/gd/tests.log | tail -25
echo "== t=$((SECONDS-T0)) done"
