# (The premise was a misread: round 5 printed dg 4.1e-07 apart, cut to "4.1" after 150 characters; round 8 showed it.)
# Session 25 round 8 (issue #6): which dg is right where round 5's one-key-block dqkwg configs and the default
# disagree (benchmarks/gd_dg_probe.py: ours default / one key block / FLA / fp32 reference at 2 x 4096 tokens).
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s25_round8.sh (carry .whl)
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl 2>&1 | tail -1
PYTHONPATH=src:/tmp/site timeout 480 python3 benchmarks/gd_dg_probe.py --seqs 2,8 2>&1 | grep -v Warn | tee $OUT/r8.log
echo "elapsed $((SECONDS - T0)) s"
