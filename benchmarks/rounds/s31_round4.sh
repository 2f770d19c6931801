# Session 31 round 4: (1) the GPU's power limit and clocks (round 2 saw the SM clock drop to 1740-1965 MHz with
# "SW power cap" under do_bench); (2) the HSTU Gluon gpu tests with the dK/dV size rule ("auto": >= 2^19 rows x heads;
# the tests force "1"); (3) issue #6: per-kernel profile of ours and FLA 0.6.0 on all five gated_delta rows, with
# power / clock samples meanwhile.
# Call (carry .whl): JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s31_round4.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
nvidia-smi -q -d POWER,CLOCK,PERFORMANCE > $OUT/power.txt 2>&1
grep -iE "Power Limit|Max Clocks|Graphics|SW Power|HW Slowdown" $OUT/power.txt | head -14
PYTHONPATH=src timeout 120 python3 -m pytest -q -m gpu -p no:cacheprovider --tb=short -rfE tests/test_hstu_triton.py \
    -k "gluon or nonfinite" > $OUT/gpu_tests.log 2>&1
grep -E "passed|failed|^E  .*Error|^FAILED" $OUT/gpu_tests.log | cut -c1-220 | tail -8
echo "elapsed $((SECONDS - T0)) s"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,clocks_throttle_reasons.active --format=csv -lms 100 \
    > $OUT/clocks.csv 2>&1 &
SMI=$!
PYTHONPATH=src:/tmp/site timeout 330 python3 benchmarks/gated_delta_triton.py --out $OUT --no-breakdown \
    --profile-rows H16-8seqs,H16-ragged,H16-1seq,H16-64seqs,H32-8seqs 2>&1 | grep -v "Warn\|warn" > $OUT/gd.log
kill $SMI
grep -E "ours fwd|kernels_|^    " $OUT/gd.log | cut -c1-250
awk -F, 'NR>1 && $3+0>150 {print $2}' $OUT/clocks.csv | sort | uniq -c | sort -rn | head -8
echo "elapsed $((SECONDS - T0)) s"
