# Session 12, round 5 (kind nvidia-h200, timeout_s 420): launch configs of the gated delta state passes
# (fwd_h, bwd_dhu: V block 16 at 1/2 warps, deeper pipelines) on H16-1seq / H16-8seqs / H16-ragged, each
# checked against the default's outputs; the public function with the best of each.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s12_round5.sh
export OUT=${OUT:-$PWD/.device-out}
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 400 python3 benchmarks/gd_state_pass_probe.py --out $OUT 2>&1 | tee $OUT/gd_state_pass_probe.log \
  | grep -v Warning; echo "rc $? t=$((SECONDS-T0))"
