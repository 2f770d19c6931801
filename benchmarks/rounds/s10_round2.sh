# Session 10, device call 2 (kind nvidia-h200): which bf16 rounding carries the SPEC-rule failures of
# small random batches. JAGATTN_GD_BF16_KEEP (per kernel: fp32 dot operands stay fp32 with tf32
# products instead of being rounded to bf16), JAGATTN_GD_BF16_FP32 (intermediates stored fp32) and
# JAGATTN_GD_SAVE_T=fp32 (T kept fp32 for the backward) on the 10 failing seeds; FLA (fla-core 0.6.0)
# under the same rule on the same seeds (--peer fla); then the speed and per-kernel times of the
# candidates. Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s10_round2.sh (carry .whl)
source benchmarks/device_round_env.sh
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl 2>&1 | tail -1
export PYTHONPATH="$PWD/src:/tmp/site" JAGATTN_AUTOTUNE=0
export F="python3 benchmarks/fuzz_spec_rule.py --scale 4 --device cuda"
SEEDS="16,32:0 16,32:1 128,64:1 32,32:0 64,16:1 128,256:1 16,16:0 32,64:1 64,48:1 128,16:1"
VARS=("X=default" "JAGATTN_GD_BF16_KEEP=all" "JAGATTN_GD_BF16_KEEP=all JAGATTN_GD_BF16_FP32=all"
  "JAGATTN_GD_BF16_KEEP=all JAGATTN_GD_BF16_FP32=all JAGATTN_GD_SAVE_T=fp32"
  "JAGATTN_GD_BF16_KEEP=all JAGATTN_GD_SAVE_T=fp32" "JAGATTN_GD_BF16_KEEP=dhu,dqkwg"
  "JAGATTN_GD_BF16_KEEP=wy JAGATTN_GD_SAVE_T=fp32" "JAGATTN_GD_BF16_KEEP=fwd_h,fwd_o"
  "JAGATTN_GD_BF16_KEEP=dhu,dqkwg,dv_local JAGATTN_GD_BF16_FP32=du,dw,dq"
  "JAGATTN_GD_BF16_FP32=all" "PEER=fla")
{ for v in "${VARS[@]}"; do for cs in $SEEDS; do echo "$v|$cs"; done; done; } > $OUT/jobs.txt
job() {
  IFS='|' read -r a b <<< "$1"
  extra=""; [[ "$a" == "PEER=fla" ]] && extra="--peer fla"
  r=$(env $a timeout 240 $F --op gated_delta --dims ${b%:*} --seed ${b#*:} $extra 2>&1 | grep -E "^FAIL|^fuzz|Error" | head -1 | cut -c1-400)
  echo "[var $a | $b] $r"
}
export -f job
echo "== t=$((SECONDS-T0)) precision jobs ($(wc -l < $OUT/jobs.txt))"
xargs -P 15 -d '\n' -n 1 bash -c 'job "$1"' _ < $OUT/jobs.txt > $OUT/precision.log 2>&1
for v in "${VARS[@]}"; do echo "-- $v: $(grep -F "[var $v |" $OUT/precision.log | grep -c FAIL) of 10 fail"; done
echo "== t=$((SECONDS-T0)) speed"
mkdir -p $OUT/speed
SV=("X=default" "JAGATTN_GD_BF16_KEEP=all" "JAGATTN_GD_BF16_KEEP=all JAGATTN_GD_BF16_FP32=all JAGATTN_GD_SAVE_T=fp32"
  "JAGATTN_GD_BF16_KEEP=dhu,dqkwg" "JAGATTN_GD_BF16_KEEP=wy JAGATTN_GD_SAVE_T=fp32" "JAGATTN_GD_BF16_KEEP=fwd_h,fwd_o")
i=0
for v in "${SV[@]}"; do
  i=$((i+1)); mkdir -p $OUT/speed/$i
  echo "-- $v"; env $v timeout 120 python3 benchmarks/gated_delta_triton.py --out $OUT/speed/$i --no-fla \
    --rows H16-8seqs,H16-1seq --profile-rows H16-8seqs 2>&1 | tee $OUT/speed/$i/log.txt | grep -E "^H16|Error|^  kernels|^    [ 0-9.]+  _gated" | cut -c1-120 | head -30
done
echo "== t=$((SECONDS-T0)) done"
