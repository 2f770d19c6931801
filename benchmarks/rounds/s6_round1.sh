# session 6, device round 1 (kind nvidia-h200, no carry needed beyond peers/bf16t = the worktree of branch
# s5-next-bf16-t rebased on main): (1) HSTU suite rows through `jagattn bench`, ours only (is the probe's
# slower forward a regression or the probe?); (2) gated delta rows + per-kernel profile, main then branch;
# (3) branch gpu production tests (bf16 T); (4) main's remaining gated delta gpu tests.
set -o pipefail
export PYTHONUNBUFFERED=1
T0=$SECONDS
mkdir -p $OUT/hstu $OUT/gd_main $OUT/gd_branch
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv | tee $OUT/env.txt
python3 -c "import torch,triton;print(torch.__version__,triton.__version__)" | tee -a $OUT/env.txt
echo "main $JAGATTN_GIT_SHA branch $BRANCH_SHA" | tee -a $OUT/env.txt
JAGATTN_AUTOTUNE=0 PYTHONPATH="$PWD/src" timeout 100 python3 -m jagattn bench --family hstu --backends triton \
  --warmup-ms 5 --rep-ms 25 --json $OUT/hstu/bench.json --no-progress 2>&1 | tail -25 | tee $OUT/hstu/log.txt
echo "== t=$((SECONDS-T0)) gd main bench"
PYTHONPATH="$PWD/src" timeout 90 python3 benchmarks/gated_delta_triton.py --out $OUT/gd_main --rows H16-8seqs,H16-1seq \
  --no-fla --no-breakdown --profile-rows H16-8seqs 2>&1 | tee $OUT/gd_main/bench.log | tail -40
echo "== t=$((SECONDS-T0)) gd branch bench"
(cd peers/bf16t && PYTHONPATH="$PWD/src" timeout 90 python3 benchmarks/gated_delta_triton.py --out $OUT/gd_branch \
  --rows H16-8seqs,H16-1seq --no-fla --no-breakdown --profile-rows H16-8seqs 2>&1 | tee $OUT/gd_branch/bench.log | tail -40)
echo "== t=$((SECONDS-T0)) gd branch production tests"
(cd peers/bf16t && PYTHONPATH="$PWD/src" timeout -s INT 170 python3 -m pytest -q -m gpu tests/test_gated_delta_triton.py \
  -k "production" -p no:cacheprovider --durations=5 2>&1 | tee $OUT/gd_branch/tests.log | tail -15)
REST=$((575 - (SECONDS-T0)))
echo "== t=$((SECONDS-T0)) main remaining gd tests, limit $REST s"
PYTHONPATH="$PWD/src" timeout -s INT $REST python3 -m pytest -q -m gpu tests/test_gated_delta_triton.py \
  -k "every_launch or keep_t or opt_in" -p no:cacheprovider --durations=8 2>&1 | tee $OUT/gd_main/tests.log | tail -20
echo "== t=$((SECONDS-T0)) done"
