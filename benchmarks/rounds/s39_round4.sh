# Session 39, round 4: cProfile of the HSTU forward op body, the backward op body and the public forward (recsys).
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 240 python3 benchmarks/host_layers.py --rows recsys -n 300 --cprofile > $OUT/host_cprofile.log 2>&1
grep -E "===|tottime|^ +[0-9]" $OUT/host_cprofile.log | cut -c1-150 | head -120
echo "elapsed $((SECONDS - T0)) s"
