# session 5 gated delta device round: bench + per-kernel profile + launch-config sweep, then gpu tests
set -o pipefail
timeout 60 python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || echo "wheel install failed"
export PYTHONPATH="$PWD/src:/tmp/site"
nvidia-smi --query-gpu=name,driver_version --format=csv | tee $OUT/env.txt
python3 -c "import torch,triton;print(torch.__version__,triton.__version__)" | tee -a $OUT/env.txt
timeout ${BENCH_S:-200} python3 benchmarks/gated_delta_triton.py --out $OUT ${BENCH_ARGS:---no-fla --rows H16-8seqs --breakdown-rows H16-8seqs --variants bwd_wy,fwd_h,bwd_dhu} 2>&1 | tee $OUT/bench.log
timeout ${TEST_S:-120} python3 -m pytest -q -m gpu tests/test_gated_delta_triton.py -x -k "${TEST_K:-production or compile}" -p no:cacheprovider 2>&1 | tee $OUT/tests.log
