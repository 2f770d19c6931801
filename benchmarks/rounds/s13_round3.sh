# Session 13, round 3 (kind nvidia-h200, timeout_s 595): (a) chunk_bwd.DH_SPLIT off/auto (dS stored as bf16
# hi + lo instead of fp32: dqkwg reads hi only, the recompute hi + lo) A/B in one process
# (benchmarks/gd_switch_ab.py), with the session's other defaults (STATE_PREFETCH auto, KEEP_QK auto);
# (b) every gated delta gpu test (scalar gate and gk) on the final defaults.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s13_round3.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 200 python3 benchmarks/gd_switch_ab.py --out $OUT \
  --switch jagattn.gated_delta.triton.chunk_bwd:DH_SPLIT=off,auto --rows H16-8seqs,H16-1seq,H16-ragged \
  2>&1 | tee $OUT/ab_dh_split.log | grep -v Warn
echo "ab done t=$((SECONDS-T0))"
PYTHONPATH=src timeout $((575-SECONDS+T0)) python3 -m pytest -q -m gpu -n 4 --durations=8 \
  tests/test_gated_delta_triton.py tests/test_gated_delta_gk.py 2>&1 | tee $OUT/gpu_tests.log | grep -v Warn | tail -25
echo "done t=$((SECONDS-T0))"
