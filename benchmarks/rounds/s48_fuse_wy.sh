# Session 48: the fused dqkwg + wy kernel (chunk_bwd.FUSE_WY) against the two launches, same process
# (gd_switch_ab: outputs vs the unfused run, alternated timings, per-kernel profile), then its launch configs.
# Reverted after round 1 (2.40 ms against 0.83 + 0.67): to rerun, `git apply benchmarks/rounds/s48_fuse_wy.diff` on a64b79a first.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s48_fuse_wy.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
mkdir -p $OUT/ab $OUT/cfg
PYTHONPATH=src timeout ${AB_LIMIT:-300} python3 benchmarks/gd_switch_ab.py \
    --switch jagattn.gated_delta.triton.chunk_bwd:FUSE_WY=off,on --rows ${ROWS:-H16-8seqs,H16-1seq,H16-ragged} \
    --repeats 2 --out $OUT/ab 2>&1 | tee $OUT/ab.txt | tail -60
echo "ab rc=$? elapsed $((SECONDS - T0)) s"
if [ -n "$CFGS" ]; then
  JAGATTN_GD_FUSE_WY=on PYTHONPATH=src timeout ${CFG_LIMIT:-200} python3 benchmarks/gd_switch_ab.py \
      --switch "config:$CFGS" --rows H16-8seqs --repeats 2 --no-profile --out $OUT/cfg 2>&1 | tee $OUT/cfg.txt | tail -40
  echo "cfg rc=$? elapsed $((SECONDS - T0)) s"
fi
