# Session 13, round 8 (kind nvidia-h200, timeout_s 595, carry .whl): (a) the gk fp16 K=V=128 shared-memory
# fix (one stage for split-tf32 state passes at K > 64): round 7's probe and the new gpu case;
# (b) the final defaults of the session on the five BENCHMARKS.md rows against FLA 0.6.0, same process
# (benchmarks/gated_delta_triton.py, FLA backward unverified), profile on H16-8seqs.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s13_round8.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl
PYTHONPATH=src timeout 150 python3 -m pytest -q -m gpu tests/test_gated_delta_gk.py -k "fp16_small" 2>&1 \
  | tee $OUT/gpu_tests.log | tail -3
echo "tests done t=$((SECONDS-T0))"
PYTHONPATH=src:/tmp/site timeout $((580-SECONDS+T0)) python3 benchmarks/gated_delta_triton.py --out $OUT \
  --rows all --no-breakdown --profile-rows H16-8seqs 2>&1 | tee $OUT/gd_rows.log | grep -v Warn | cut -c1-330
echo "done t=$((SECONDS-T0))"
