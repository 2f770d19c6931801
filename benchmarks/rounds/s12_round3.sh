# Session 12, round 3 (kind nvidia-h200, timeout_s 420): (1) the long-rows forward list (256x32/8 warps first
# at max_seq_len >= 4096) against the old first config and the phase loops on the two long suite rows, plus
# a 256-row dQ tile; (2) the HSTU gpu tests of the new defaults. Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s12_round3.sh
export OUT=${OUT:-$PWD/.device-out}
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 200 python3 benchmarks/hstu_probe.py --out $OUT --deadline 170 --no-gr \
  --rows B64-N4096,B128-N2048 --candidates fwd:128x32w4s3,fwd:256x32w8s3,fwd:128x64w8s4,phases,dq:256x32w8s3,dq:128x64w8s3 \
  > $OUT/probe_stdout.log 2>&1; echo "probe rc $? t=$((SECONDS-T0))"
grep -E "default fwd|candidates|SUMMARY|^\[.*\]   " $OUT/hstu_probe.log | cut -c1-400
JAGATTN_AUTOTUNE=0 PYTHONPATH=src timeout -s INT $((400 - (SECONDS-T0))) python3 -m pytest -q -m gpu \
  tests/test_hstu_triton.py -n 4 -p no:cacheprovider -rfE 2>&1 | tee $OUT/hstu_gpu_tests.log | tail -4
echo "done t=$((SECONDS-T0))"
