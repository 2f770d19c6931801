# Session 24 round 4: resident programs per SM of every kernel (benchmarks/occupancy_probe.py; the local Triton 3.6
# compile gives the gated delta dhu kernel 115460 B of shared memory: two per SM only just fit), then (issue #6)
# the dhu launch configs on H16-8seqs / H16-ragged (gd_switch_ab, same process).
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s24_round4.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
for fr in gated_delta:H16-8seqs gated_delta:H16-1seq hstu:B256-N1024 attention:causal-mean8192-hkv16; do
  PYTHONPATH=src timeout 120 python3 benchmarks/occupancy_probe.py --family ${fr%%:*} --row ${fr#*:} \
      --json $OUT/occ_${fr#*:}.json 2>&1 | grep -v Warn | tee -a $OUT/occ.log
done
echo "elapsed $((SECONDS - T0)) s"
mkdir -p $OUT/sw
PYTHONPATH=src timeout 250 python3 benchmarks/gd_switch_ab.py --repeats 3 --out $OUT/sw --rows H16-8seqs,H16-ragged \
    --switch "config:default|bwd_dhu=64,4,1|bwd_dhu=64,8,2" 2>&1 | grep -v Warn | tee $OUT/sw.log | grep -v "^      "
echo "elapsed $((SECONDS - T0)) s"
