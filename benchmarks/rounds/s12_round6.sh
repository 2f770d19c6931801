# Session 12, round 6 (kind nvidia-h200, timeout_s 590): the new state-pass launch rule (BV 16 -> three
# stages, bwd_dhu fills the GPU once) through gd_state_pass_probe.py (the defaults are now the rule's; vnew
# and the final state checked, not the unwritten hbuf slots), then every gated delta + gk gpu test.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s12_round6.sh
export OUT=${OUT:-$PWD/.device-out}
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 170 python3 benchmarks/gd_state_pass_probe.py --out $OUT --rows H16-1seq,H16-8seqs 2>&1 \
  | tee $OUT/gd_state_pass_probe.log | grep -v Warning; echo "probe rc $? t=$((SECONDS-T0))"
JAGATTN_AUTOTUNE=0 PYTHONPATH=src timeout -s INT $((580 - (SECONDS-T0))) python3 -m pytest -q -n 4 -m gpu \
  tests/test_gated_delta_triton.py tests/test_gated_delta_gk.py tests/test_gated_delta_launch_rules.py -p no:cacheprovider -rfE \
  2>&1 | tee $OUT/gd_tests.log | tail -6
echo "done t=$((SECONDS-T0))"
