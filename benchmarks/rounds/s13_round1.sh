# Session 13, round 1 (kind nvidia-h200, timeout_s 590, carry .whl): per-kernel CUDA time of the gated delta
# forward and backward, ours and FLA 0.6.0's, split by pass (benchmarks/gated_delta_triton.py profile), on
# H16-8seqs and H16-1seq, with the same-process row timings. Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s13_round1.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl
PYTHONPATH=src:/tmp/site timeout 560 python3 benchmarks/gated_delta_triton.py --out $OUT \
  --rows H16-8seqs,H16-1seq --no-breakdown --profile-rows H16-8seqs,H16-1seq 2>&1 | tee $OUT/gd_rows.log | grep -v Warn | cut -c1-330
echo "done t=$((SECONDS-T0))"
