# Session 8, third device call (kind nvidia-h200, timeout_s 590). (1) accuracy of the new opt-in
# JAGATTN_GD_WU_LOWP=w (W on bf16 tensor cores, U~ kept tf32: round 1 showed "u" fails 32k-single with
# the same dg 1.74 as "wu", so U~ carries the error) on 32k-single, then 32k-8seqs-gva2 only if it passed;
# (2) speed of "w" vs off on H16-8seqs with the per-kernel profile; (3) launch-config sweep of the w/u
# kernel (new "fwd_wu" candidates) and of fwd_o, bwd_dv_local, bwd_dqkwg (its 4 never-measured configs);
# (4) gpu tests: every_launch_config (covers fwd_wu) and opt_in_variant_bf16[wu-lowp-w].
# Call: JAGATTN_GIT_SHA=<full sha> bash benchmarks/rounds/s8_round3.sh
source benchmarks/device_round_env.sh
mkdir -p $OUT/off $OUT/w $OUT/sweep
echo "== t=$((SECONDS-T0)) accuracy"
PYTHONPATH="$PWD/src" timeout -s INT 130 python3 benchmarks/gd_lowp_t_diag.py --cases 32k-single --variants off,w 2>&1 \
  | tee $OUT/diag.log
if grep -q " w .*PASS" $OUT/diag.log; then
  PYTHONPATH="$PWD/src" timeout -s INT 130 python3 benchmarks/gd_lowp_t_diag.py --cases 32k-8seqs-gva2 --variants off,w \
    2>&1 | tee -a $OUT/diag.log
fi
echo "== t=$((SECONDS-T0)) speed"
for m in off w; do
  JAGATTN_GD_WU_LOWP=$m PYTHONPATH="$PWD/src" timeout 90 python3 benchmarks/gated_delta_triton.py --out $OUT/$m --no-fla \
    --no-breakdown --rows H16-8seqs --profile-rows H16-8seqs 2>&1 | grep -v -i warn | tee $OUT/$m/bench.log \
    | grep -E "ours|wu_loop"
done
echo "== t=$((SECONDS-T0)) sweep"
PYTHONPATH="$PWD/src" timeout 200 python3 benchmarks/gated_delta_triton.py --out $OUT/sweep --no-fla --rows none \
  --breakdown-rows H16-8seqs --variants fwd_wu,fwd_o,bwd_dv_local,bwd_dqkwg 2>&1 | grep -v -i warn | tee $OUT/sweep/log.txt \
  | grep -v "kernel "
echo "== t=$((SECONDS-T0)) gpu tests"
PYTHONPATH="$PWD/src" timeout -s INT $((575 - (SECONDS-T0))) python3 -m pytest -q -m gpu tests/test_gated_delta_triton.py \
  -k "every_launch_config or (opt_in_variant_bf16 and wu-lowp-w)" -p no:cacheprovider -rA 2>&1 | tee $OUT/tests.log \
  | grep -E "PASS|FAIL|Error|passed|failed"
echo "== t=$((SECONDS-T0)) done"
