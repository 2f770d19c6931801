# Session 13, round 4 (kind nvidia-h200, timeout_s 595, carry .whl): the final gated delta defaults of the
# session (KEEP_QK auto, STATE_PREFETCH auto, DH_SPLIT off): (a) the gpu tests round 3 failed or that the
# changes touch (compile, opcheck, norm-on-load, production bf16); (b) the five BENCHMARKS.md rows against
# FLA 0.6.0 in the same process (benchmarks/gated_delta_triton.py, FLA backward unverified), with the
# per-kernel profile on H16-8seqs. Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s13_round4.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl
PYTHONPATH=src timeout 260 python3 -m pytest -q -m gpu -n 4 tests/test_gated_delta_triton.py tests/test_gated_delta_gk.py \
  -k "compile or opcheck or norm_on_load or production_bf16" 2>&1 | tee $OUT/gpu_tests.log | grep -v Warn | tail -8
echo "tests done t=$((SECONDS-T0))"
PYTHONPATH=src:/tmp/site timeout $((580-SECONDS+T0)) python3 benchmarks/gated_delta_triton.py --out $OUT \
  --rows all --no-breakdown --profile-rows H16-8seqs 2>&1 | tee $OUT/gd_rows.log | grep -v Warn | cut -c1-330
echo "done t=$((SECONDS-T0))"
