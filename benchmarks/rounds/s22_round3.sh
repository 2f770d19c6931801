# Session 22 round 3 (issue #6): v_new in the factored form T (beta V - X S) inside the state passes
# (chunk_fwd.FUSE_WU=fwd|state|all; round 2's version formed W and U~ whole: forward h 0.226 -> 0.402 ms, dhu and
# the recompute spilled) against the w/u kernel, same process, every suite row; then the gated delta gpu tests with
# FUSE_WU=all (6 processes). Local compile (Triton 3.6, sm_90, H16-8seqs): fused forward h 236 registers, no
# spill; fused recompute 176 B spill, fused dhu 632 B.
# Call (kind nvidia-h100-x1): JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s22_round3.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
mkdir -p $OUT/fuse
PYTHONPATH=src timeout 330 python3 benchmarks/gd_switch_ab.py --repeats 3 --out $OUT/fuse \
    --rows H16-8seqs,H16-64seqs,H16-ragged,H32-8seqs,H16-1seq \
    --switch "jagattn.gated_delta.triton.chunk_fwd:FUSE_WU=off,fwd,state,all" \
    2>&1 | grep -v Warn | tee $OUT/fuse.log | grep -v "^      "
echo "elapsed $((SECONDS - T0)) s"
JAGATTN_GD_FUSE_WU=all PYTHONPATH=src python3 benchmarks/gpu_tests_parallel.py --workers 6 \
    --timeout $((585 - SECONDS + T0)) --out $OUT tests/test_gated_delta_triton.py 2>&1 | tail -8
echo "elapsed $((SECONDS - T0)) s"
