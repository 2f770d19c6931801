# Session 17, round 5 (kind nvidia-h100-x1): attention dK/dV with lse2/delta in the row-padded layout (aligned, unclamped,
# 8-byte cp.async instead of 4-byte; lse scaled once in the dQ kernel) against the tree before it (old_tree/src =
# commit 2e45b93's src, carried untracked), in separate processes alternated old/new/old/new; o and gradients
# compared bitwise between the trees (both dQ paths); then the attention gpu tests of the new tree.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s17_round5.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
ROWS=causal-mean8192-hkv16,causal-mean8192-hkv4,skewed,noncausal-mean2048,causal-mean2048-hkv4,causal-mean512-hkv16,window1024-mean8192
for mode in kernel atomic; do
  for tree in old_tree .; do
    PYTHONPATH=$tree/src python3 benchmarks/rounds/s17_save_grads.py causal-mean2048-hkv4 $OUT/g_${mode}_$(basename $tree).pt $mode 2>&1 | grep -v Warn | tail -1
  done
  echo "== $mode: old vs new"; python3 benchmarks/rounds/s17_save_grads.py --compare $OUT/g_${mode}_old_tree.pt $OUT/g_${mode}_..pt
done
rm -f $OUT/*.pt
for pass in 1 2; do
  for tree in old_tree .; do
    name=$([ $tree = . ] && echo new || echo old)$pass
    echo "=== $name"
    PYTHONPATH=$tree/src timeout 170 python3 benchmarks/src_variant_ab.py --family attention --variants benchmarks/rounds/s17_variants_order.py \
        --only none --repeats 1 --out $OUT/$name --rows $ROWS 2>&1 | grep -v Warn | grep -E "^row|default:|rror" | cut -c1-200
  done
done
echo "bench done $((SECONDS - T0)) s"
