# Session 23 round 5 (issue #6): FUSE_O for the sequences of at most 1.5 x the mean length only (the longer ones keep
# the unfused pass's stores and get their o from the output kernel), against off, same process (gd_switch_ab); then
# the gpu tests of the fused output and the production sizes.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s23_round5.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
mkdir -p $OUT/fuseo
PYTHONPATH=src timeout 200 python3 benchmarks/gd_switch_ab.py --repeats 3 --out $OUT/fuseo \
    --rows H16-ragged,H16-8seqs,H16-64seqs,H32-8seqs --switch "jagattn.gated_delta.triton.chunk_fwd:FUSE_O=off,auto" \
    2>&1 | grep -v Warn | tee $OUT/fuseo.log | grep -v "^      "
echo "elapsed $((SECONDS - T0)) s"
PYTHONPATH=src python3 benchmarks/gpu_tests_parallel.py --workers 4 --timeout $((560 - SECONDS + T0)) --out $OUT \
    -k "fuse_o or odd-multihead" tests/test_gated_delta_triton.py 2>&1 | tail -12
grep -h "fuse_o bf16" $OUT/gpu_tests_w*.log
echo "elapsed $((SECONDS - T0)) s"
