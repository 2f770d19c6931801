# Session 23 round 1 (issue #6): the forward's state pass writing o itself (chunk_fwd.FUSE_O=auto: no per-chunk
# states / v_new stored, no output launch) against the output kernel, same process (gd_switch_ab); its launch
# configs; then the gated delta gpu tests that run the fused output (fuse_o, production bf16 / fp16).
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s23_round1.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
mkdir -p $OUT/fuseo $OUT/cfg
PYTHONPATH=src timeout 200 python3 benchmarks/gd_switch_ab.py --repeats 3 --out $OUT/fuseo \
    --rows H16-8seqs,H16-ragged --switch "jagattn.gated_delta.triton.chunk_fwd:FUSE_O=off,auto" \
    2>&1 | grep -v Warn | tee $OUT/fuseo.log | grep -v "^      "
echo "elapsed $((SECONDS - T0)) s"
PYTHONPATH=src timeout 130 python3 benchmarks/gd_switch_ab.py --repeats 3 --out $OUT/cfg \
    --rows H16-8seqs --switch "config:default|fwd_h=64,4,1|fwd_h=64,8,2" \
    2>&1 | grep -v Warn | tee $OUT/cfg.log | grep -v "^      "
echo "elapsed $((SECONDS - T0)) s"
PYTHONPATH=src python3 benchmarks/gpu_tests_parallel.py --workers 5 --timeout $((560 - SECONDS + T0)) --out $OUT \
    -k "fuse_o or production_bf16 or production_fp16" tests/test_gated_delta_triton.py 2>&1 | tail -12
echo "elapsed $((SECONDS - T0)) s"
