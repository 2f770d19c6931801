# Session 39, round 5: round 2 plus the backward() host time alone, with the op body or the node stubbed.
# launch's parts, and the backward node / body timed inside autograd's device thread.
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 240 python3 benchmarks/host_layers.py --rows recsys -n 200 2>&1 | tee $OUT/host_layers.log | grep -v Warning
echo "elapsed $((SECONDS - T0)) s"
