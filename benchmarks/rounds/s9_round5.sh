# Session 9 round 5 (kind nvidia-h200, timeout_s 590): (1) the gk crash fixes (WY column tile >= 32, state
# pass V block >= 32) on the head dims that crashed, (2) the fp16 dk=256 dv=64 shared-memory fix, (3) the
# bf16 precision knobs (JAGATTN_GD_BF16_FP32 / JAGATTN_GD_BF16_DOT) on the cases that failed the SPEC rule
# in round 3/4, (4) their speed on H16-8seqs / H16-1seq (and the FUSE_DV=auto default).
source benchmarks/device_round_env.sh
export PYTHONPATH="$PWD/src" JAGATTN_AUTOTUNE=0
export F="python3 benchmarks/fuzz_spec_rule.py --scale 4 --device cuda"
{
  for d in 16,16 16,32 16,64 128,16 128,32 32,16 256,16; do echo "sweep|gated_delta_gk|$d"; done
  for d in 256,64 256,128 256,256 256,16; do echo "sweep|gated_delta|$d"; done
  for v in "JAGATTN_GD_BF16_FP32=all JAGATTN_GD_BF16_DOT=tf32x3" "JAGATTN_GD_BF16_FP32=h JAGATTN_GD_BF16_DOT=tf32x3" \
           "JAGATTN_GD_BF16_FP32=h,vnew,u" "JAGATTN_GD_BF16_DOT=tf32x3" "JAGATTN_GD_BF16_FP32=h"; do
    for cs in 16,32:0 16,32:1 128,64:1 32,32:0 64,16:1 128,256:1 16,16:0 32,64:1 64,48:1 128,16:1; do
      echo "var|$v|$cs"; done; done
} > $OUT/jobs.txt
job() {
  IFS='|' read -r kind a b <<< "$1"
  if [ "$kind" = var ]; then
    r=$(env $a timeout 200 $F --op gated_delta --dims ${b%:*} --seed ${b#*:} 2>&1 | grep -E "^FAIL|^fuzz" | head -1 | cut -c1-330)
    echo "[var $a | $b] $r"
  else
    timeout 300 $F --op $a --dims $b --cases 3 --isolate 2>&1 | grep -E "^FAIL|^fuzz|died" | cut -c1-400 | sed "s/^/[$a $b] /"
  fi
}
export -f job
echo "== t=$((SECONDS-T0)) fuzz jobs"
xargs -P 14 -d '\n' -n 1 bash -c 'job "$1"' _ < $OUT/jobs.txt > $OUT/round5.log 2>&1
grep "^\[gated" $OUT/round5.log | cut -c1-300
for v in "JAGATTN_GD_BF16_FP32=all JAGATTN_GD_BF16_DOT=tf32x3" "JAGATTN_GD_BF16_FP32=h JAGATTN_GD_BF16_DOT=tf32x3" \
         "JAGATTN_GD_BF16_FP32=h,vnew,u" "JAGATTN_GD_BF16_DOT=tf32x3" "JAGATTN_GD_BF16_FP32=h"; do
  echo "-- $v: $(grep -F "[var $v |" $OUT/round5.log | grep -c FAIL) of 10 fail; $(grep -F "[var $v |" $OUT/round5.log | grep FAIL | sed 's/.*\] FAIL --op gated_delta --seed \([0-9]*\) --dims \([0-9,]*\).*: \([a-z_]*\): backend error max_abs=\([0-9.e-]*\).*reference error max_abs=\([0-9.e-]*\).*/\2:\1 \3 \4\/\5/' | tr '\n' ';')"
done
echo "== t=$((SECONDS-T0)) speed"
mkdir -p $OUT/speed
for v in "JAGATTN_GD_FUSE_DV=auto" "JAGATTN_GD_BF16_FP32=all JAGATTN_GD_BF16_DOT=tf32x3" "JAGATTN_GD_BF16_FP32=h JAGATTN_GD_BF16_DOT=tf32x3" \
         "JAGATTN_GD_BF16_FP32=h,vnew,u" "JAGATTN_GD_BF16_DOT=tf32x3" "JAGATTN_GD_BF16_FP32=h"; do
  echo "-- $v"
  env $v timeout 100 python3 benchmarks/gated_delta_triton.py --out $OUT/speed --no-fla --no-breakdown --rows H16-8seqs,H16-1seq \
    --profile-rows none 2>&1 | grep -E "^H16"
  [ $((SECONDS-T0)) -gt 560 ] && break
done
echo "== t=$((SECONDS-T0)) done"
