# Session 21, round 2 (issue #6): the fused prepare kernel (gate cumsum + T + W / U~ in one program per chunk and
# head, chunk_fwd._gated_delta_fwd_prepare_kernel) against the split kkt_solve16 + wu_loop kernels, same process
# (benchmarks/gd_switch_ab.py: per-output bitwise / max rel diff against the first value, fwd / bwd medians, peak,
# per-kernel CUDA time), then its launch configs on one row, then keeping T (auto = fp32) against recomputing it.
# Not adopted: the kernel is in benchmarks/rounds/s21_round2_fused_prepare.diff (apply it to 3628d0f to rerun).
# Call (kind nvidia-h100-x1): JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s21_round2.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
mkdir -p $OUT/split_fused $OUT/configs $OUT/save_t
PYTHONPATH=src timeout 220 python3 benchmarks/gd_switch_ab.py --repeats 2 --out $OUT/split_fused \
    --rows H16-8seqs,H16-1seq --switch "jagattn.gated_delta.triton.chunk_fwd:PREPARE=split,fused" \
    2>&1 | grep -v Warn | tee $OUT/split_fused.log | grep -v "^      "
echo "elapsed $((SECONDS - T0)) s"
PYTHONPATH=src timeout 150 python3 benchmarks/gd_switch_ab.py --repeats 2 --no-profile --out $OUT/configs \
    --rows H16-8seqs --switch "config:default|fwd_prepare=64,4,0|fwd_prepare=64,1,0|fwd_prepare=128,4,1|fwd_prepare=128,8,0" \
    2>&1 | grep -v Warn | tee $OUT/configs.log
echo "elapsed $((SECONDS - T0)) s"
PYTHONPATH=src timeout 120 python3 benchmarks/gd_switch_ab.py --repeats 2 --out $OUT/save_t \
    --rows H16-8seqs --switch "jagattn.gated_delta.ops:SAVE_T=auto,off" \
    2>&1 | grep -v Warn | tee $OUT/save_t.log | grep -v "^      "
echo "elapsed $((SECONDS - T0)) s"
