# Session 39, round 1: where the host time of an HSTU call goes, layer by layer (benchmarks/host_layers.py) on the
# recsys and B256 rows; whether the gated delta H16-8seqs / H16-1seq forward is host-bound (bwd_timeline --no-sleep);
# Triton 3.6's launch path source (JITFunction.run, CompiledKernel, Autotuner.run, Gluon's JIT) for the fast launch.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s39_round1.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
python3 - > $OUT/triton_src.txt 2>&1 <<'PY'
import inspect, triton
from triton.runtime import jit, autotuner
from triton.compiler import compiler
print(triton.__version__, triton.__file__)
print(inspect.getsource(jit.JITFunction.run))
print(inspect.getsource(jit.create_function_from_signature))
print(inspect.getsource(compiler.CompiledKernel))
print(inspect.getsource(autotuner.Autotuner.run))
try:
    from triton.experimental.gluon._runtime import GluonJITFunction
    print(inspect.getsource(GluonJITFunction))
except Exception as e:
    print("gluon:", e)
from triton.backends.nvidia import driver as nd
print(inspect.getsource(nd.CudaLauncher))
PY
wc -l $OUT/triton_src.txt
PYTHONPATH=src timeout 240 python3 benchmarks/host_layers.py --rows recsys,B256-N1024 -n 200 2>&1 | tee $OUT/host_layers.log | grep -v Warning
echo "elapsed $((SECONDS - T0)) s"
PYTHONPATH=src timeout 200 python3 benchmarks/bwd_timeline.py --family gated_delta --rows H16-8seqs,H16-1seq --no-sleep --reps 2 -n 30 2>&1 | tee $OUT/gd_timeline.log | grep -E "row |host|rep " | cut -c1-200
echo "elapsed $((SECONDS - T0)) s"
