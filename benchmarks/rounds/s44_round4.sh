# Session 44 round 4: attention launch replay on by default — the test that ran out of memory in round 3 (six test
# processes sharing the GPU) alone with replay forced on, the attention rows' host / kernel time with the defaults;
# then the hstu suite against GR (carry peers) with the SM clock, power and clock-event reasons sampled every 100 ms
# (round 3: our kernels run under the software power cap at ~1650 MHz, GR's at ~1980).
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s44_round4.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
JAGATTN_LAUNCH_REPLAY=1 PYTHONPATH=src timeout 120 python3 -m pytest -q -p no:cacheprovider -m gpu \
    "tests/test_attention_triton.py::test_gpu_fp32_forward" 2>&1 | tail -2
PYTHONPATH=src timeout 60 python3 -W ignore benchmarks/host_vs_kernel.py --family attention \
    --rows causal-mean512-hkv16,causal-mean512-hkv4 --impls triton 2>&1 | tee $OUT/host_vs_kernel_default.txt
echo "tests $((SECONDS - T0)) s"
export JAGATTN_GR_COMMIT=$(cat peers/gr/COMMIT 2>/dev/null)
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.sw_power_cap \
    --format=csv -lms 100 > $OUT/clocks.csv &
SMI=$!
mkdir -p $OUT/suite1
# each output line stamped with the time, to match the clock samples
OUT=$OUT/suite1 timeout 260 bash benchmarks/run_device.sh --family hstu --backends triton,gr_triton 2>&1 \
    | while IFS= read -r l; do printf '%(%H:%M:%S)T %s\n' -1 "$l"; done > $OUT/suite1_stdout.txt
kill $SMI
grep -v "^\[" $OUT/suite1/log.txt | grep -E "^[A-Za-z0-9-]+:|^  (triton|gr)" | cut -c1-200
echo "elapsed $((SECONDS - T0)) s"
cd $OUT && tar czf suite.tgz suite1 suite1_stdout.txt && rm -rf suite1 suite1_stdout.txt
