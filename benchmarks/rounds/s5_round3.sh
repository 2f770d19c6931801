# session 5 integrated device round: gated delta rows + profile, gated delta gpu tests, attention forward
# probe (helper's round 2), attention + export gpu tests. kind nvidia-h200, carry .whl
set -o pipefail
export PYTHONUNBUFFERED=1
timeout 60 python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || echo "wheel install failed"
nvidia-smi --query-gpu=name,driver_version --format=csv | tee $OUT/env.txt
python3 -c "import torch,triton;print(torch.__version__,triton.__version__)" | tee -a $OUT/env.txt
echo "sha $JAGATTN_GIT_SHA" | tee -a $OUT/env.txt
mkdir -p $OUT/gd $OUT/attn
PYTHONPATH="$PWD/src" timeout 100 python3 benchmarks/gated_delta_triton.py --out $OUT/gd --no-fla --no-breakdown 2>&1 | tee $OUT/gd/bench.log
PYTHONPATH="$PWD/src" timeout 150 python3 -m pytest -q -m gpu tests/test_gated_delta_triton.py -k "production or compile or opcheck or fp16" -p no:cacheprovider 2>&1 | tee $OUT/gd/tests.log
PYTHONPATH="$PWD/src" timeout 105 python3 benchmarks/attention_fwd_probe.py --out $OUT/attn --peer-deadline 90 2>&1 | tee $OUT/attn/run.log
JAGATTN_AUTOTUNE=0 PYTHONPATH="$PWD/src" timeout 150 python3 -m pytest -q -m gpu tests/test_attention_triton.py tests/test_export.py -p no:cacheprovider 2>&1 | tee $OUT/attn/pytest.log
