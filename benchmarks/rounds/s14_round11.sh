# Session 14, round 11 (kind nvidia-h200): (1) the attention forward's grid order with the wide tile on the
# long-key rows (heads fastest or not; causal mean 8192 Hkv 4 was 1.17x Flex in round 10); (2) the HSTU
# B128-N2048 forward's bimodal time (1.28 vs 1.44 ms within one call in round 1): six alternated repeats
# with the SM clock and power sampled every 200 ms.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s14_round11.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 150 python3 benchmarks/attention_fwd_tile_diag.py --rows causal-mean8192-hkv4,causal-mean8192-hkv16,skewed,noncausal-mean2048 \
    --tiles none --head-fast none,0,1 2>&1 | grep -v Warn | tee $OUT/tile_diag.log
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv -lms 200 > $OUT/smi.csv 2>&1 &
SMI=$!
echo "== t=$((SECONDS-T0)) hstu repeats"
PYTHONPATH=src timeout 200 python3 benchmarks/src_variant_ab.py --family hstu --variants benchmarks/rounds/s14_variants_ws.py \
    --only none --rows B128-N2048,B256-N1024 --repeats 6 --out $OUT 2>&1 | grep -v Warn | grep -E "^row|: fwd" | cut -c1-250
kill $SMI
echo "elapsed $((SECONDS - T0)) s"
