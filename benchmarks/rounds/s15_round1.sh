# Session 15, round 1 (kind nvidia-h200, carry .whl): the SPEC-rule failures left by session 14's GPU fuzz.
# (a) gated delta seeds 3002 (dg, K=256, lengths [157, 1, 1]) and 3201 (dbeta, lengths [0, 1, 1]) taken apart
#     (benchmarks/gd_fuzz_case_diag.py): our default, each precision knob, the fp32 route (fp32 copies of
#     q/k/v/h0, outputs rounded back) and FLA 0.6.0 on the same case;
# (b) failure rates: gated delta bf16 at K=256 vs K=128 (--dims), and tiny batches of every op (--cap-len 2).
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s15_round1.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl
C=jagattn.gated_delta.triton.common
diag() { PYTHONPATH=src:/tmp/site timeout 400 python3 benchmarks/gd_fuzz_case_diag.py "$@" 2>&1 | grep -v Warn; }
{ diag --seed 3002 --scale 4 --dtype bf16 --fp32-route --fla --variant "$C.BF16_FP32=all" \
    --variant "$C.BF16_DOT=ieee" --variant "$C.BF16_DOT=tf32x3" --variant "$C.BF16_PRECISE=off" \
    --variant "$C.BF16_FP32=all;$C.BF16_DOT=ieee" --variant "$C.BF16_KEEP=all;$C.BF16_DOT=tf32x3;$C.BF16_FP32=all"
  diag --seed 3002 --scale 4 --dtype fp16 --fp32-route; } > $OUT/diag3002.log 2>&1 &
{ diag --seed 3201 --scale 2 --dtype bf16 --fp32-route --fla --where dbeta --variant "$C.BF16_FP32=all;$C.BF16_DOT=ieee"; } > $OUT/diag3201.log 2>&1 &
F="python3 benchmarks/fuzz_spec_rule.py --device cuda --isolate"
job() { set -- $1; PYTHONPATH=src timeout 300 $F --op $1 --first-seed $2 --cases 60 --scale $3 --time-budget 240 ${@:4} 2>&1 | grep -E "^FAIL|^fuzz|Error" | sed "s/^/[$*] /"; }
export -f job; export F
printf '%s\n' "gated_delta 5000 4 --dtype bf16 --dims 256,64" "gated_delta 5000 4 --dtype bf16 --dims 128,64" \
  "gated_delta 5100 4 --dtype bf16 --dims 256,128" "gated_delta 6000 1 --cap-len 2" \
  "hstu 6000 1 --cap-len 2" "hstu 6100 1 --cap-len 3" "attention 6000 1 --cap-len 2" "attention 6100 1 --cap-len 3" \
  | xargs -P 8 -d '\n' -n 1 bash -c 'job "$1"' _ 2>&1 | tee $OUT/fuzz.log
wait
cat $OUT/diag3002.log $OUT/diag3201.log
echo "elapsed $((SECONDS - T0)) s"
