# Session 24 round 11 (issue #6, for the next session): Nsight Compute on the chain-bound passes of the gated delta
# backward (dhu, the recompute = _gated_delta_fwd_h_kernel) and FLA's dhu / h kernels, one forward + backward of
# H16-8seqs (benchmarks/ncu_probe.py): speed of light, occupancy, warp stall reasons, and per-SASS-line stall samples of
# our dhu (source page) to see what one chain step waits on.
# Call (carry .whl): JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s24_round11.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
PYTHONPATH=src:/tmp/site timeout 400 ncu --profile-from-start off --clock-control none -k "regex:dhu|fwd_h|chunk_gated_delta_rule_fwd_kernel_h" \
    --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats --section SchedulerStats \
    --section SourceCounters -o $OUT/gd python3 benchmarks/ncu_probe.py --family gated_delta --rows H16-8seqs \
    --impls triton,fla 2>&1 | grep -v "Warn\|warn" | tail -15
echo "profiled $((SECONDS - T0)) s"
ncu --import $OUT/gd.ncu-rep --page details --csv > $OUT/gd_details.csv 2>&1
ncu --import $OUT/gd.ncu-rep --page raw --csv --metrics smsp__average_warp_latency_issue_stalled,smsp__pcsamp_sample_count > $OUT/gd_raw.csv 2>&1 || true
ncu --import $OUT/gd.ncu-rep --page source --csv -k regex:_gated_delta_bwd_dhu --print-source sass > $OUT/gd_dhu_sass.csv 2>&1 || true
ls -la $OUT; gzip -f $OUT/gd.ncu-rep; ls -la $OUT/gd.ncu-rep.gz
echo "elapsed $((SECONDS - T0)) s"
