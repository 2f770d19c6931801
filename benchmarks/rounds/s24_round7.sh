# Session 24 round 7 (issues #4, #5, #6): GPU fuzz of every op's Triton backend against the SPEC rule on the current
# tree (the last GPU fuzz ran in session 15, before sessions 16-24's kernel changes: attention TMA loads, HSTU loop
# addresses / edge masks / grid order, gated delta FUSE_WU / FUSE_O / KKT_NORM / FUSE_K_L2N). New seeds (24000-),
# output gradients rounded for the gold too (--rounded-grads), fatal CUDA errors survived (--isolate).
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s24_round7.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
for ob in gated_delta:140 attention:120 hstu:120 gated_delta_gk:90; do
  op=${ob%%:*}
  PYTHONPATH=src timeout $((${ob#*:} + 25)) python3 benchmarks/fuzz_spec_rule.py --device cuda --op $op --scale 4 \
      --rounded-grads --first-seed 24000 --cases 400 --time-budget ${ob#*:} --isolate 2>&1 | grep -v Warn | tee $OUT/fuzz_$op.log | tail -8
  echo "elapsed $((SECONDS - T0)) s"
done
