# Session 12, round 8 (kind nvidia-h200, timeout_s 590, carry .whl): the gated delta rows the state-pass rule
# changes (H16-8seqs: bwd_dhu 64 wide; H16-1seq: V blocks of 16 at three stages; H16-ragged) with FLA 0.6.0
# in the same process (benchmarks/gated_delta_triton.py; round 7's suite bench was cut by FLA's cold
# autotuning). Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s12_round8.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl
PYTHONPATH=src:/tmp/site timeout 560 python3 benchmarks/gated_delta_triton.py --out $OUT \
  --rows H16-8seqs,H16-1seq,H16-ragged --no-breakdown --profile-rows none 2>&1 | tee $OUT/gd_rows.log | grep -v Warn | cut -c1-330
echo "done t=$((SECONDS-T0))"
