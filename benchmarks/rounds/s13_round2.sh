# Session 13, round 2 (kind nvidia-h200, timeout_s 590): two gated delta changes, each A/B in one process
# (benchmarks/gd_switch_ab.py: bitwise check, alternated timings, peak, per-kernel profile), then the gpu
# tests that cover them. (a) common.STATE_PREFETCH 0/1: the state passes load gates (and the recompute
# its dS tile) one chunk ahead; (b) ops.KEEP_QK off/auto: the keep-T forward keeps the normalised q/k
# copies and factors for the backward. (c) pytest -m gpu on the production / opcheck / launch cases with
# JAGATTN_GD_STATE_PREFETCH=1. Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s13_round2.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 200 python3 benchmarks/gd_switch_ab.py --out $OUT \
  --switch jagattn.gated_delta.triton.common:STATE_PREFETCH=0,1 --rows H16-1seq,H16-8seqs,H16-ragged \
  2>&1 | tee $OUT/ab_prefetch.log | grep -v Warn
mkdir -p $OUT/qk && PYTHONPATH=src timeout 130 python3 benchmarks/gd_switch_ab.py --out $OUT/qk \
  --switch jagattn.gated_delta.ops:KEEP_QK=off,auto --rows H16-8seqs,H16-1seq \
  2>&1 | tee $OUT/ab_keep_qk.log | grep -v Warn
echo "ab done t=$((SECONDS-T0))"
JAGATTN_GD_STATE_PREFETCH=1 PYTHONPATH=src timeout $((570-SECONDS+T0)) python3 -m pytest -q -m gpu -n 4 \
  tests/test_gated_delta_triton.py -k "production_bf16 or opcheck or every_launch_config or fp16_small" 2>&1 \
  | tee $OUT/gpu_tests.log | tail -15
echo "done t=$((SECONDS-T0))"
