# Session 25 round 9 (issue #6): the recompute's gate sums per key row (an in-warp reduction; dqkwg adds the rows)
# instead of a scalar per chunk (the sum across warps: a shared-memory round trip and a barrier on each chain step).
# Against the tree before it (old_tree/src = f528cec's src, carried untracked), separate processes alternated
# old/new twice (gd_switch_ab with a one-value switch: times and per-kernel times); o and gradients compared across
# the trees (all but dg bitwise expected). Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s25_round9.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
for row in H16-8seqs H16-1seq; do
  for tree in old_tree .; do
    PYTHONPATH=$tree/src python3 benchmarks/rounds/s25_save_grads.py $row $OUT/g_$(basename $tree).pt 2>&1 | grep -v Warn | tail -1
  done
  echo "== $row old vs new"; python3 benchmarks/rounds/s25_save_grads.py --compare $OUT/g_..pt $OUT/g_old_tree.pt
done
rm -f $OUT/*.pt
mkdir -p $OUT/r9
for pass in 1 2; do
  for tree in old_tree .; do
    name=$([ $tree = . ] && echo new || echo old)$pass; mkdir -p $OUT/r9/$name
    PYTHONPATH=$tree/src timeout 120 python3 benchmarks/gd_switch_ab.py --repeats 2 --out $OUT/r9/$name \
      --rows H16-8seqs,H16-ragged,H16-1seq,H16-64seqs --switch "jagattn.gated_delta.triton.common:STATE_PREFETCH=auto" \
      2>&1 | grep -v Warn > $OUT/r9/$name.log
    echo "=== $name"; grep -E "^H16|^    fwd|bwd _gated_delta_(fwd_h|bwd_dqkwg)" $OUT/r9/$name.log | cut -c1-110
  done
done
tar czf $OUT/r9.tgz -C $OUT r9 && rm -rf $OUT/r9
echo "elapsed $((SECONDS - T0)) s"
