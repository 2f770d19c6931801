# Session 23 round 2 (issue #6): FUSE_O with its one-stage launch (fwd_h_o 64,4,1) against the output kernel on the
# other fused rows (gd_switch_ab, same process); fwd_h_o at 8 warps; the fused pass on H16-1seq at V blocks of 64,
# and (own process, may fault) at 32 with 8 warps.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s23_round2.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
mkdir -p $OUT/fuseo $OUT/var $OUT/var32
PYTHONPATH=src timeout 200 python3 benchmarks/gd_switch_ab.py --repeats 3 --out $OUT/fuseo \
    --rows H16-8seqs,H16-64seqs,H32-8seqs,H16-ragged --switch "jagattn.gated_delta.triton.chunk_fwd:FUSE_O=off,auto" \
    2>&1 | grep -v Warn | tee $OUT/fuseo.log | grep -v "^      "
echo "elapsed $((SECONDS - T0)) s"
PYTHONPATH=src timeout 100 python3 benchmarks/src_variant_ab.py --family gated_delta --repeats 3 --out $OUT/var \
    --variants benchmarks/rounds/s23_variants.py --only o_8w1 --rows gated_delta/H16-8seqs 2>&1 | grep -v Warn | tail -6
PYTHONPATH=src timeout 100 python3 benchmarks/src_variant_ab.py --family gated_delta --repeats 3 --out $OUT/var \
    --variants benchmarks/rounds/s23_variants.py --only o_1seq_bv64 --rows gated_delta/H16-1seq 2>&1 | grep -v Warn | tail -6
echo "elapsed $((SECONDS - T0)) s"
PYTHONPATH=src timeout 100 python3 benchmarks/src_variant_ab.py --family gated_delta --repeats 3 --out $OUT/var32 \
    --variants benchmarks/rounds/s23_variants.py --only o_1seq_bv32w8 --rows gated_delta/H16-1seq 2>&1 | grep -v Warn | tail -8
echo "elapsed $((SECONDS - T0)) s"
