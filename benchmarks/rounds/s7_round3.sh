# Session 7, last device call (kind nvidia-h200, timeout_s ~300): checks the two gated delta changes made
# on the CPU this session: T kept in fp32 by default when a backward can follow (JAGATTN_GD_SAVE_T=auto)
# and dq stored in bf16 (bf16 inputs without GVA). (1) rows H16-8seqs and H16-64seqs, ours only: fwd/bwd
# and PEAK MEMORY (predicted ~2.16 / ~2.25 GB; FLA 2.36); (2) the gpu tests that reach the changed paths
# (32k-single: long-sequence accuracy of the bf16 dq; compile_fullgraph: the keep-T op under
# torch.compile; odd-multihead; opcheck_keep_t), with a cut (-s INT) that keeps the summary.
# Call: JAGATTN_GIT_SHA=<full sha> bash benchmarks/rounds/s7_round3.sh
set -o pipefail
export PYTHONUNBUFFERED=1
T0=$SECONDS
mkdir -p $OUT/gd
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv
  python3 -c "import torch,triton;print(torch.__version__,triton.__version__)"; echo "sha $JAGATTN_GIT_SHA"; } | tee $OUT/env.txt
PYTHONPATH="$PWD/src" timeout 130 python3 benchmarks/gated_delta_triton.py --out $OUT/gd --no-fla --no-breakdown \
  --rows H16-8seqs,H16-64seqs --profile-rows none 2>&1 | grep -v -i warn | tee $OUT/gd/bench.log | grep -v "^      "
echo "== t=$((SECONDS-T0)) gated delta gpu tests"
PYTHONPATH="$PWD/src" timeout -s INT $((285 - (SECONDS-T0))) python3 -m pytest -q -m gpu tests/test_gated_delta_triton.py \
  -k "32k-single or compile_fullgraph or odd-multihead or opcheck_keep_t" -p no:cacheprovider -rA --durations=6 2>&1 \
  | tee $OUT/gd/tests.log | grep -E "PASS|FAIL|Error|passed|failed|s call"
echo "== t=$((SECONDS-T0)) done"
