# Prepared in session 8 for session 9's FIRST device call (kind nvidia-h200, carry [".whl"], timeout_s 590).
# Never run on a GPU: (a) ops.NORM_ON_LOAD="auto" (q/k normalised on load in every scalar-gate chunk
# kernel; default still "off"), (b) fp16 normalised q/k in fp32 (the default for fp16 since session 8),
# (c) WU_LOWP="w" default (measured, but compile_fullgraph was cut by the call's limit), (d) the opt-in
# JAGATTN_GD_FUSE_DV=1 (dU_local computed inside dhu, no dv_local launch).
# (1) the gated delta rows with FLA in the same process, default (NORM off) and NORM auto, per-kernel
# profile of H16-8seqs for both (expected: l2norm 0.258 -> ~0.13 ms per fwd+bwd, peak -256 MiB; watch h
# and dhu, whose k/q tiles now pass through registers); (2) gpu tests: NORM bitwise vs copies in bf16,
# the norm-on-load variant under the SPEC rule, fp16_small (fp32 copies), compile_fullgraph, opcheck.
# If NORM auto is bitwise equal and faster on every row: make it the default (ops.NORM_ON_LOAD) in its
# own commit; the same for FUSE_DV (chunk_bwd.FUSE_DV) if its variant test passes and the bwd is faster. Call: JAGATTN_GIT_SHA=<full sha> bash benchmarks/rounds/s9_round1.sh
source benchmarks/device_round_env.sh
mkdir -p $OUT/off $OUT/auto $OUT/fuse
timeout 60 python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  || echo "wheel install failed: FLA n/a"
for m in off auto; do
  echo "== t=$((SECONDS-T0)) rows, JAGATTN_GD_NORM_ON_LOAD=$m"
  fla=$([ $m = off ] && echo "" || echo "--no-fla")
  JAGATTN_GD_NORM_ON_LOAD=$m PYTHONPATH="$PWD/src:/tmp/site" timeout 170 python3 benchmarks/gated_delta_triton.py \
    --out $OUT/$m $fla --no-breakdown --profile-rows H16-8seqs 2>&1 | grep -v -i warn | tee $OUT/$m/bench.log \
    | grep -v "^      0.0"
done
echo "== t=$((SECONDS-T0)) JAGATTN_GD_FUSE_DV=1 (dU_local inside dhu)"
JAGATTN_GD_FUSE_DV=1 PYTHONPATH="$PWD/src" timeout 90 python3 benchmarks/gated_delta_triton.py --out $OUT/fuse --no-fla \
  --no-breakdown --rows H16-8seqs,H16-1seq --profile-rows H16-8seqs 2>&1 | grep -v -i warn | tee $OUT/fuse/bench.log \
  | grep -v "^      0.0"
echo "== t=$((SECONDS-T0)) gpu tests: the new variants first, then what session 8's changes touched"
PYTHONPATH="$PWD/src" timeout -s INT $((420 - (SECONDS-T0))) python3 -m pytest -q -m gpu tests/test_gated_delta_triton.py \
  -k "norm_on_load or norm-on-load or fuse-dv" -p no:cacheprovider -rA 2>&1 | tee $OUT/tests1.log \
  | grep -E "PASS|FAIL|Error|passed|failed"
PYTHONPATH="$PWD/src" timeout -s INT $((575 - (SECONDS-T0))) python3 -m pytest -q -m gpu tests/test_gated_delta_triton.py \
  -k "fp16_small or compile_fullgraph or opcheck" -p no:cacheprovider -rA 2>&1 | tee $OUT/tests2.log \
  | grep -E "PASS|FAIL|Error|passed|failed"
echo "== t=$((SECONDS-T0)) done"
