#!/usr/bin/env bash
# The CPU suite (Triton's interpreter) under the device's versions, torch 2.11 + Triton 3.6, instead of CI's
# torch 2.13 + Triton 3.9. Session 47 added it after two version-only bugs: torch < 2.13's dynamo folds
# torch.compiler.is_exporting() to True under torch.compile (compiled calls skipped the fp32 route on the device),
# and torch 2.11's wrap_triton refuses the interpreter's kernels (every gated delta call failed on such a CPU).
# Neither showed in CI. The venv is outside the repo; PyPI's torch 2.11.0 is a CUDA build (~4.6 GB, runs on the CPU).
# numpy < 2.3: Triton 3.6's interpreter fails on numpy 2.4 ("only 0-dimensional arrays can be converted to Python
# scalars").
# Usage: bash benchmarks/cpu_suite_torch211.sh [pytest args]   (default: the whole suite, -n 2)
set -euo pipefail
cd "$(dirname "$0")/.."
V=${V211:-/tmp/v211}
if [ ! -x "$V/bin/python" ]; then
  python3 -m venv "$V"
  "$V/bin/pip" install -q torch==2.11.0
  "$V/bin/pip" install -q "numpy<2.3" "pytest>=7" "pytest-xdist>=3" "hypothesis>=6" "rich>=13" "matplotlib>=3.7"
fi
"$V/bin/python" -c "import torch, triton, numpy; print('torch', torch.__version__, 'triton', triton.__version__, 'numpy', numpy.__version__)"
[ $# -gt 0 ] || set -- -n 2 -q
PYTHONPATH=src exec "$V/bin/python" -m pytest -p no:cacheprovider "$@"
