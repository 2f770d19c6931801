# Session 12, round 7 (kind nvidia-h200, timeout_s 590, carry .whl): (1) the gated delta production gpu
# tests (bf16, fp16 with the new 280-chain case) and the launch-config test after the bwd_dhu width cap;
# (2) the default gated_delta suite with FLA in the same run (the state-pass launch rule of this session).
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s12_round7.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout -s INT 300 python3 -m pytest -q -n 4 -m gpu tests/test_gated_delta_triton.py \
  -k "production or every_launch" -p no:cacheprovider -rfE 2>&1 | tee $OUT/gd_tests.log | tail -4
echo "tests t=$((SECONDS-T0))"
OUT=$OUT/bench timeout $((575 - (SECONDS-T0))) bash benchmarks/run_device.sh --family gated_delta --suite default \
  --isolate --warmup-ms 5 --rep-ms 25 --time-budget $((540 - (SECONDS-T0))) | grep -E "^H16|^H32|triton |fla" | cut -c1-220
echo "done t=$((SECONDS-T0))"
