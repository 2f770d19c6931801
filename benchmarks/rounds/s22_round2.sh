# Session 22 round 2 (issue #6): W and U~ formed inside the state passes (chunk_fwd.FUSE_WU) against the w/u
# kernel, same process (benchmarks/gd_switch_ab.py: per-output bitwise / max rel diff against "off", fwd / bwd
# medians, peak, per-kernel CUDA time); then launch configs of the fused state passes (local compile: the fused
# forward h at 4 warps BV 64 spills 48 B, the fused dhu 504 B, the fused recompute 424 B).
# Call (kind nvidia-h100-x1): JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s22_round2.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
mkdir -p $OUT/fuse $OUT/configs
PYTHONPATH=src timeout 300 python3 benchmarks/gd_switch_ab.py --repeats 3 --out $OUT/fuse \
    --rows H16-8seqs,H16-1seq,H16-64seqs --switch "jagattn.gated_delta.triton.chunk_fwd:FUSE_WU=off,fwd,all" \
    2>&1 | grep -v Warn | tee $OUT/fuse.log | grep -v "^      "
echo "elapsed $((SECONDS - T0)) s"
JAGATTN_GD_FUSE_WU=all PYTHONPATH=src timeout $((580 - SECONDS + T0)) python3 benchmarks/gd_switch_ab.py --repeats 2 \
    --no-profile --out $OUT/configs --rows H16-8seqs,H16-1seq \
    --switch "config:default|fwd_h=64,8,2;bwd_dhu=64,8,2|fwd_h=32,4,2;bwd_dhu=32,4,2|bwd_dhu=32,4,2" \
    2>&1 | grep -v Warn | tee $OUT/configs.log
echo "elapsed $((SECONDS - T0)) s"
