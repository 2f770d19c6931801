# session 6, device round 2 (kind nvidia-h200, carry peers/bf16t): (1) which bf16-T site breaks the SPEC rule
# on the production cases (benchmarks/gd_lowp_t_diag.py on the branch tree); (2) HSTU fwd+bwd profile
# of the recsys and B256 rows (benchmarks/hstu_fwdbwd_profile.py on main).
set -o pipefail
export PYTHONUNBUFFERED=1
T0=$SECONDS
mkdir -p $OUT
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv | tee $OUT/env.txt
echo "main $JAGATTN_GIT_SHA branch $BRANCH_SHA (+ uncommitted LOWP_T switch)" | tee -a $OUT/env.txt
PYTHONPATH="$PWD/src" timeout 60 python3 benchmarks/hstu_fwdbwd_profile.py 2>&1 | tee $OUT/hstu_profile.log | grep -v "^-\|Warning" | cut -c1-170 | head -90
echo "== t=$((SECONDS-T0)) lowp-T diag"
PYTHONPATH="$PWD/peers/bf16t/src" timeout 230 python3 benchmarks/gd_lowp_t_diag.py 2>&1 | tee $OUT/gd_lowp_t.log | tail -14
echo "== t=$((SECONDS-T0)) done"
