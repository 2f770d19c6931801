# Session 14, round 15 (kind nvidia-h200): round 13's failing fuzz seeds again, now with their --scale (the
# reproducer line lacked it; fixed), each with the default and the switches that could cause it.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s14_round15.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
job() { eval "$1" 2>&1 | grep -E "^FAIL|^fuzz|Error" | sed "s|^|[$1] |" | cut -c1-420; }
export -f job
F="PYTHONPATH=src timeout 120 python3 benchmarks/fuzz_spec_rule.py --device cuda"
C=jagattn.gated_delta.triton.common
{
  echo "$F --op gated_delta --seed 3002 --scale 4 --dtype bf16"
  echo "$F --op gated_delta --seed 3002 --scale 4 --dtype bf16 --set jagattn.gated_delta.ops.KEEP_QK=off"
  echo "$F --op gated_delta --seed 3002 --scale 4 --dtype bf16 --set $C.BF16_PRECISE=on"
  echo "$F --op gated_delta --seed 3201 --scale 2 --dtype bf16"
  echo "$F --op gated_delta --seed 3201 --scale 2 --dtype bf16 --set $C.BF16_PRECISE=on"
  echo "$F --op gated_delta --seed 3201 --scale 2 --dtype bf16 --set $C.BF16_PRECISE=off"
  for s in 3023 3033; do
    echo "$F --op hstu --seed $s --scale 8"
    echo "JAGATTN_HSTU_PACKED=0 $F --op hstu --seed $s --scale 8"
    echo "JAGATTN_HSTU_FAST_SIGMOID=0 $F --op hstu --seed $s --scale 8"
  done
  echo "$F --op attention --seed 3002 --scale 8"
} | xargs -P 12 -d '\n' -n 1 bash -c 'job "$1"' _ 2>&1 | tee $OUT/repro.log
echo "elapsed $((SECONDS - T0)) s"
