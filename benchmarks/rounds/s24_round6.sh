# Session 24 round 6 (issue #6): the backward's chain-bound passes on uniform and ragged rows: (a) the recompute's V block
# through the fwd_h config (the forward changes too; its backward is the recompute at that block: round 2 had H16-ragged
# 3.077 -> 3.018 ms at 32), (b) the local dv outside dhu (chunk_bwd.FUSE_DV=0: a shorter dhu step).
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s24_round6.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
mkdir -p $OUT/sw1 $OUT/sw2
PYTHONPATH=src timeout 250 python3 benchmarks/gd_switch_ab.py --repeats 3 --out $OUT/sw1 --rows H16-8seqs,H16-64seqs,H32-8seqs \
    --switch "config:default|fwd_h=32,4,2" 2>&1 | grep -v Warn | tee $OUT/sw1.log | grep -v "^      "
echo "elapsed $((SECONDS - T0)) s"
PYTHONPATH=src timeout 250 python3 benchmarks/gd_switch_ab.py --repeats 3 --out $OUT/sw2 --rows H16-ragged,H16-8seqs \
    --switch "jagattn.gated_delta.triton.chunk_bwd:FUSE_DV=auto,0" 2>&1 | grep -v Warn | tee $OUT/sw2.log | grep -v "^      "
echo "elapsed $((SECONDS - T0)) s"
