# Session 18 round 6 (issue #6): gated delta dqkwg with the key block as the fastest grid index (its programs of
# one chunk share the dO / v_new / dU tiles through L2) against the tree before (old_tree/src = commit 2d582d4's
# src, carried untracked): backward kernel times by the torch profiler in separate processes old/new/old/new,
# o and gradients compared bitwise; then the gated delta gpu tests of the new tree.
# Call (kind nvidia-h100-x1, carry old_tree): JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s18_round6.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
ROWS=H16-8seqs,H16-64seqs,H16-1seq
for pass in 1 2; do
  for tree in old_tree .; do
    name=$([ $tree = . ] && echo new || echo old)$pass
    echo "=== $name"
    PYTHONPATH=$tree/src timeout 120 python3 benchmarks/rounds/s18_gd_tree.py $ROWS $OUT/$name.json $OUT/g_$name.pt 2>&1 | grep -v Warn | tail -5
  done
done
echo "== old vs new"; python3 benchmarks/rounds/s18_gd_tree.py --compare $OUT/g_old1.pt $OUT/g_new1.pt
rm -f $OUT/*.pt
echo "bench done $((SECONDS - T0)) s"
PYTHONPATH=src timeout -s INT 150 python3 -m pytest -q -m gpu tests/test_gated_delta_triton.py -p no:cacheprovider -rfE -x \
    2>&1 | tail -4
echo "elapsed $((SECONDS - T0)) s"
