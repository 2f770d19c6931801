# Session 15, round 2 (kind nvidia-h200, carry .whl): round 1's gated delta bf16 failures at ~150-470 tokens
# (K=128/256, dg max and rms over the rule: the bf16 precise path) under each precision knob, printed per
# variant (round 1's diag printed only at the end and was cut by the time limit), and the same fuzz seeds
# with the dots of fp32 operands on split-tf32 (BF16_DOT=tf32x3) instead of tf32 (which truncates).
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s15_round2.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl
C=jagattn.gated_delta.triton.common
diag() { PYTHONPATH=src:/tmp/site timeout 250 python3 benchmarks/gd_fuzz_case_diag.py "$@" 2>&1 | grep -v Warn; }
V="--fp32-route --variant $C.BF16_DOT=tf32x3 --variant $C.BF16_DOT=ieee --variant $C.BF16_FP32=all --variant $C.BF16_PRECISE=off"
diag --seed 3002 --scale 4 --dtype bf16 $V --fla > $OUT/diag3002.log 2>&1 &
diag --seed 5116 --scale 4 --dtype bf16 $V > $OUT/diag5116.log 2>&1 &
diag --seed 5018 --scale 4 --dtype bf16 $V > $OUT/diag5018.log 2>&1 &
diag --seed 5015 --scale 4 --dtype bf16 --where dbeta --fp32-route --variant $C.BF16_DOT=ieee > $OUT/diag5015.log 2>&1 &
F="python3 benchmarks/fuzz_spec_rule.py --device cuda --isolate"
job() { set -- $1; PYTHONPATH=src timeout 250 $F --op $1 --first-seed $2 --cases 31 --scale $3 --time-budget 200 ${@:4} 2>&1 | grep -E "^FAIL|^fuzz|Error" | cut -c1-420 | sed "s/^/[$*] /"; }
export -f job; export F
printf '%s\n' "gated_delta 5000 4 --dtype bf16 --dims 128,64 --set $C.BF16_DOT=tf32x3" \
  "gated_delta 5100 4 --dtype bf16 --dims 256,128 --set $C.BF16_DOT=tf32x3" \
  "gated_delta 5000 4 --dtype bf16 --dims 128,64 --set $C.BF16_DOT=ieee" \
  | xargs -P 3 -d '\n' -n 1 bash -c 'job "$1"' _ 2>&1 | tee $OUT/fuzz.log
wait
for f in $OUT/diag*.log; do echo "== $f"; grep -v "^  " $f | head -20; done
echo "elapsed $((SECONDS - T0)) s"
