# Sourced by the device round scripts (benchmarks/s8_*.sh): shell settings, the start time T0 and the
# provenance line ($OUT/env.txt: GPU, driver, clocks, torch and Triton versions, JAGATTN_GIT_SHA).
set -o pipefail
export PYTHONUNBUFFERED=1
T0=$SECONDS
mkdir -p "$OUT"
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv
  python3 -c "import torch,triton;print(torch.__version__,triton.__version__)"; echo "sha $JAGATTN_GIT_SHA"; } | tee "$OUT/env.txt"
