# Prepared in session 18, not run (device time spent) — the first round of the next session:
#  1. HSTU: the unmasked last partial block (mask._phases, a2d19b1) against the tree of round 5 (old_tree/src =
#     `git archive 80904a4 src`, carried untracked): the hstu suite rows through the bench (ours only), separate
#     processes old/new/old/new; then the HSTU gpu tests of the new tree;
#  2. gated delta gpu tests of the new tree (dqkwg and gk_dqk grid order: round 6 ran out of time after one test;
#     the 32k production tests spend most of their time in the reference recurrence: give them ~300 s).
# Call (kind nvidia-h100-x1, carry old_tree): JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s18_prepared_next.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
for pass in 1 2; do
  for tree in old_tree .; do
    name=$([ $tree = . ] && echo new || echo old)$pass
    echo "=== $name"
    PYTHONPATH=$tree/src timeout 100 python3 -m jagattn bench --family hstu --backends triton --json $OUT/$name.json \
      2>&1 | grep -E "^[A-Za-z].*:|^  triton" | cut -c1-160
  done
done
echo "hstu A/B done $((SECONDS - T0)) s"
PYTHONPATH=src timeout -s INT 150 python3 -m pytest -q -m gpu tests/test_hstu_triton.py -p no:cacheprovider -rfE 2>&1 | tail -3
PYTHONPATH=src timeout -s INT 320 python3 -m pytest -q -m gpu tests/test_gated_delta_triton.py tests/test_gated_delta_gk.py \
    -p no:cacheprovider -rfE 2>&1 | tail -4
echo "elapsed $((SECONDS - T0)) s"
