# Session 9 round 4 (kind nvidia-h200, timeout_s 590), after s9_round3's head-dim sweep found: (a) the gk
# illegal shared read also at dk=128 dv=16, (b) OutOfResources (shared memory) for fp16 dk=256 dv=64,
# (c) bf16 scalar-gate cases 1.1-1.35x over the SPEC allowance (o, final_state, dq, dv, dg, dbeta).
# (1) sanitizer on (a), WY knob variants on it; (2) the traceback of (b); (3) the (c) cases under the
# bf16 precision knobs; (4) the rest of the head-dim sweep (attention, HSTU).
source benchmarks/device_round_env.sh
export PYTHONPATH="$PWD/src" JAGATTN_AUTOTUNE=0
F="python3 benchmarks/fuzz_spec_rule.py --scale 4 --device cuda"
M=jagattn.gated_delta.triton.chunk_gk
C=jagattn.gated_delta.triton.common
W=jagattn.gated_delta.triton.chunk_fwd
echo "== t=$((SECONDS-T0)) sanitizer gk 128,16 seed 2"
timeout 120 compute-sanitizer --print-limit 50 $F --op gated_delta_gk --seed 2 --dims 128,16 > $OUT/sanitizer2.log 2>&1
grep -E "^========= +at |Invalid" $OUT/sanitizer2.log | sort | uniq -c | head -20
for v in "$M.WY_BC_MIN=32" "$M.WY_WARPS=4"; do
  for cs in "128,16 2" "16,16 0" "16,32 2"; do set -- $cs
    echo "-- $v dims $1 seed $2: $(timeout 60 $F --op gated_delta_gk --seed $2 --dims $1 --set $v 2>&1 | grep -E '^FAIL|^fuzz' | cut -c1-250)"
  done
done
echo "== t=$((SECONDS-T0)) traceback fp16 dk=256 dv=64 (OutOfResources)"
timeout 120 $F --op gated_delta --seed 2 --dims 256,64 2>&1 | grep -E "File .*jagattn|Error|FAIL" | cut -c1-300 | tail -12
echo "== t=$((SECONDS-T0)) bf16 precision variants + sweep rest (parallel)"
{
  for v in default "$W.WU_LOWP=off" "$C.BF16_INTER=fp32" "$C.BF16_INTER=fp32 --set $W.WU_LOWP=off" "$C.BF16_DOT=ieee --set $C.BF16_INTER=fp32 --set $W.WU_LOWP=off"; do
    for cs in 16,32:0 16,32:1 128,64:1 32,32:0 64,16:1 128,256:1 16,16:0 32,64:1 64,48:1 128,16:1; do
      echo "var|$v|$cs"; done; done
  for d in 96,96 128,128 256,256 64,128 128,64 256,128 40,16 80,80 192,192; do echo "sweep|attention|$d"; done
  for d in 16,16 32,32 64,64 128,128 256,256 64,128 128,32 48,80 96,96 200,200; do echo "sweep|hstu|$d"; done
} > $OUT/jobs.txt
job() {
  IFS='|' read -r kind a b <<< "$1"
  if [ "$kind" = var ]; then
    sets=(); [ "$a" = default ] || read -r -a sets <<< "--set $a"
    r=$(timeout 200 $F --op gated_delta --dims ${b%:*} --seed ${b#*:} "${sets[@]}" 2>&1 | grep -E "^FAIL|^fuzz" | head -1 | cut -c1-330)
    echo "[var $a | $b] $r"
  else
    timeout 300 $F --op $a --dims $b --cases 3 --isolate 2>&1 | grep -E "^FAIL|^fuzz|died" | cut -c1-400 | sed "s/^/[$a $b] /"
  fi
}
export -f job; export F
xargs -P 14 -d '\n' -n 1 bash -c 'job "$1"' _ < $OUT/jobs.txt | tee $OUT/round4.log | grep -v " 0/3 failed"
echo "== t=$((SECONDS-T0)) done"
