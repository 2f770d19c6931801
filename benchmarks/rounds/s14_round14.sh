# Session 14, round 14 (kind nvidia-h200): the failing seeds of round 13's GPU fuzz, each with the default and
# with the switch that could cause it: gated delta bf16 seeds 3002 / 3201 with KEEP_QK=off (no kept bf16 q/k);
# HSTU bf16 seeds 3006 / 3023 / 3033 with JAGATTN_HSTU_PACKED=0 (fp32 silu) and JAGATTN_HSTU_SCALE_LAST=0;
# attention fp16 seed 3002 (one query, one key: the known delta-rounding class, session 8) as is.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s14_round14.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
job() { eval "$1" 2>&1 | grep -E "^FAIL|^fuzz|Error" | sed "s|^|[$1] |" | cut -c1-420; }
export -f job
F="PYTHONPATH=src timeout 120 python3 benchmarks/fuzz_spec_rule.py --device cuda"
{
  for s in 3002 3201; do
    echo "$F --op gated_delta --seed $s --dtype bf16"
    echo "$F --op gated_delta --seed $s --dtype bf16 --set jagattn.gated_delta.ops.KEEP_QK=off"
  done
  for s in 3006 3023 3033; do
    echo "$F --op hstu --seed $s"
    echo "JAGATTN_HSTU_PACKED=0 $F --op hstu --seed $s"
    echo "JAGATTN_HSTU_SCALE_LAST=0 $F --op hstu --seed $s"
    echo "JAGATTN_HSTU_FAST_SIGMOID=0 $F --op hstu --seed $s"
  done
  echo "$F --op attention --seed 3002"
} | xargs -P 12 -d '\n' -n 1 bash -c 'job "$1"' _ 2>&1 | tee $OUT/repro.log
echo "elapsed $((SECONDS - T0)) s"
