# Prepared in session 7 for session 8's first device call (kind nvidia-h200, timeout_s 590): the opt-in
# JAGATTN_GD_WU_LOWP (w/u kernel products on bf16 tensor cores; "u" = U~ only, "wu" = W and U~), never
# run on a GPU. (1) accuracy: benchmarks/gd_lowp_t_diag.py on the 32k-single production case (SPEC rule
# ratios per output for off / u / wu; session 6: "wu" failed with dg 1.74 on 32k-single); (2) speed:
# H16-8seqs and H16-1seq with off and u, ours only, per-kernel profile of H16-8seqs; (3) the gpu test
# opt_in_variant_bf16[wu-lowp-u] (SPEC rule at 8192 tokens GVA 2, bitwise repeat). The diag's second
# case (32k-8seqs-gva2) is left out for time: run `gd_lowp_t_diag.py --cases 32k-8seqs-gva2` if "u" wins.
# If "u" passes (1) and (3) and is faster: make it the default (chunk_fwd.WU_LOWP) in its own commit.
# Call: JAGATTN_GIT_SHA=<full sha> bash benchmarks/rounds/s8_round1.sh
source benchmarks/device_round_env.sh
mkdir -p $OUT/off $OUT/u
echo "== t=$((SECONDS-T0)) accuracy (diag, 32k-single: the case 'wu' failed in session 6)"
PYTHONPATH="$PWD/src" timeout -s INT 220 python3 benchmarks/gd_lowp_t_diag.py --cases 32k-single 2>&1 | tee $OUT/diag.log
echo "== t=$((SECONDS-T0)) speed"
for m in off u; do
  JAGATTN_GD_WU_LOWP=$m PYTHONPATH="$PWD/src" timeout 110 python3 benchmarks/gated_delta_triton.py --out $OUT/$m --no-fla \
    --no-breakdown --rows H16-8seqs,H16-1seq --profile-rows H16-8seqs 2>&1 | grep -v -i warn | tee $OUT/$m/bench.log \
    | grep -v "^      0.0"
done
echo "== t=$((SECONDS-T0)) gpu test"
PYTHONPATH="$PWD/src" timeout -s INT $((575 - (SECONDS-T0))) python3 -m pytest -q -m gpu tests/test_gated_delta_triton.py \
  -k "opt_in_variant_bf16 and wu-lowp" -p no:cacheprovider -rA 2>&1 | tee $OUT/tests.log | grep -E "PASS|FAIL|Error|passed|failed"
echo "== t=$((SECONDS-T0)) done"
