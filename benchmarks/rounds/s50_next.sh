# Session 50 (prepared without device time; not run yet): the two chains that OVERLAP runs at once (dhu on the current
# stream, the backward's recompute on the side stream) and what they share. Session 49's profile: beside each other
# dhu gets slower (8seqs 0.443 -> 0.669 ms, ragged 0.646 -> 0.880) and the recompute faster (0.467 -> 0.396, 0.642 ->
# 0.582): the recompute is queued first and takes the SMs. Modes:
#   tests   the side-stream test (both OVERLAP_ORDER values and LONGEST_FIRST, bitwise the serial result under poison)
#           and the every-launch-config test (now with the recompute's own "bwd_h" configs)
#   order   gd_switch_ab chunk_bwd.OVERLAP_ORDER=rec_first,dhu_first on the five suite rows
#   config  gd_switch_ab over the two passes' V blocks (bwd_h below 64 also unfuses the recompute's w/u: one more
#           kernel) on H16-8seqs and H16-ragged. Shared memory (local Triton 3.6, sm_90, sm90_resources.py --lengths
#           8 x 4096): dhu (64,4,2) 115 KB + 255 regs, the recompute (64,4,2) 91 KB + 228 regs: two programs per SM
#           (dhu + dhu, dhu + recompute or recompute + recompute); (64,4,1) 48 KB each (255 regs: still two per SM)
#   longest chunk_bwd.LONGEST_FIRST=off,on with OVERLAP_ORDER=dhu_first (H16-ragged queues 224 dhu + 224 recompute
#           programs for 264 places: the longest chains first), ragged and 8seqs (no-op there: equal lengths)
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s50_next.sh [tests|order|longest|config]
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
if [ "${1:-order}" = tests ]; then
  PYTHONPATH=src timeout 300 python3 -m pytest -q -p no:cacheprovider tests/test_gated_delta_triton.py -m gpu \
      -k "side_stream_is_the_serial or every_launch_config" 2>&1 | tail -4
  echo "tests rc=$? elapsed $((SECONDS - T0)) s"
fi
if [ "${1:-order}" = order ]; then
  mkdir -p $OUT/order
  PYTHONPATH=src timeout 420 python3 benchmarks/gd_switch_ab.py \
      --switch jagattn.gated_delta.triton.chunk_bwd:OVERLAP_ORDER=rec_first,dhu_first \
      --rows H16-8seqs,H16-ragged,H16-1seq,H16-64seqs,H32-8seqs --repeats 2 --out $OUT/order 2>&1 | tee $OUT/order.txt \
      | grep -v "^        0\.[01]" | grep -v "fwd _" | tail -70
  echo "order rc=$? elapsed $((SECONDS - T0)) s"
fi
if [ "${1:-order}" = longest ]; then
  mkdir -p $OUT/longest
  JAGATTN_GD_OVERLAP_ORDER=dhu_first PYTHONPATH=src timeout 300 python3 benchmarks/gd_switch_ab.py \
      --switch jagattn.gated_delta.triton.chunk_bwd:LONGEST_FIRST=off,on \
      --rows H16-ragged,H16-8seqs --repeats 2 --out $OUT/longest 2>&1 | tee $OUT/longest.txt \
      | grep -v "^        0\.[01]" | grep -v "fwd _" | tail -40
  echo "longest rc=$? elapsed $((SECONDS - T0)) s"
fi
if [ "${1:-order}" = config ]; then
  mkdir -p $OUT/config
  PYTHONPATH=src timeout 420 python3 benchmarks/gd_switch_ab.py \
      --switch "config:default|bwd_dhu=32,4,2|bwd_h=32,4,2|bwd_dhu=32,4,2;bwd_h=32,4,2|bwd_dhu=64,4,3" \
      --rows H16-8seqs,H16-ragged --repeats 2 --out $OUT/config 2>&1 | tee $OUT/config.txt \
      | grep -v "^        0\.[01]" | grep -v "fwd _" | tail -80
  echo "config rc=$? elapsed $((SECONDS - T0)) s"
fi
