# Session 13, round 6 (kind nvidia-h200, timeout_s 595): the launch configs round 5's sweep found faster
# (bwd_dqkwg 64,4,2,64 and 32,4,3,64; bwd_wy 64,4,2), A/B against the defaults in one process per row with
# alternated timings (benchmarks/gd_switch_ab.py "config:" switch; outputs compared to the default's).
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s13_round6.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 570 python3 benchmarks/gd_switch_ab.py --out $OUT --no-profile --repeats 3 \
  --switch "config:default|bwd_dqkwg=64,4,2,64|bwd_dqkwg=32,4,3,64|bwd_wy=64,4,2|bwd_dqkwg=64,4,2,64;bwd_wy=64,4,2|bwd_dqkwg=32,4,3,64;bwd_wy=64,4,2" \
  --rows H16-8seqs,H16-1seq,H16-64seqs,H16-ragged,H32-8seqs 2>&1 | tee $OUT/ab_configs.log | grep -v Warn
echo "done t=$((SECONDS-T0))"
