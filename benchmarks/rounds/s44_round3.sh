# Session 44 round 3: the attention / export / eager-fast / HSTU / gluon gpu tests with launch replay forced on
# (round 1's run of them was cut by its timeout: a fresh machine compiles slowly); first round 2's probe on B256 with
# the clock-event reasons (why our kernels run at lower SM clocks than GR's).
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s44_round3.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
export JAGATTN_GR_COMMIT=$(cat peers/gr/COMMIT 2>/dev/null)
PYTHONPATH=src:peers/gr timeout 100 python3 -W ignore benchmarks/fwd_in_fwdbwd.py --rows B256-N1024 \
    --impls triton,gr_triton 2>&1 | grep -v "invalid_mask\|offs_m\[\|offs_n\[" | tee $OUT/fwd_in_fwdbwd.txt | cut -c1-600
JAGATTN_LAUNCH_REPLAY=1 PYTHONPATH=src timeout 470 python3 benchmarks/gpu_tests_parallel.py --workers 6 --timeout 460 \
    --out $OUT/tests tests/test_attention_triton.py tests/test_export.py tests/test_eager_fast.py tests/test_hstu_triton.py \
    tests/test_gluon.py 2>&1 | tail -8
grep -h -E "^FAILED|^ERROR" $OUT/tests/*.log 2>/dev/null | head -20
for f in $OUT/tests/*.log; do tail -n 1 $f; done
echo "elapsed $((SECONDS - T0)) s"
