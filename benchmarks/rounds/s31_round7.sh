# Session 31 round 7 (issue #5): the hstu suite against generative-recommenders' Triton HSTU with the Gluon dQ kernel on windows (ctx6) and the Gluon dK/dV
# kernel's size rule (default from 2^19 rows x heads: B256 / B128 / B64 take it, recsys keeps the Triton kernel),
# twice in one call (the host-bound recsys row and ctx6 moved 8-60% between session 30's and round 3's runs).
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s31_round7.sh   (carry peers)
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
export JAGATTN_GR_COMMIT=$(cat peers/gr/COMMIT 2>/dev/null)
for R in 1 2; do
  mkdir -p $OUT/suite$R
  OUT=$OUT/suite$R timeout 250 bash benchmarks/run_device.sh --family hstu --backends triton,gr_triton \
      > $OUT/suite${R}_stdout.txt 2>&1
  grep -v "^\[" $OUT/suite$R/log.txt | grep -E "^[A-Za-z0-9-]+:|^  (triton|gr)" | cut -c1-200
  echo "elapsed $((SECONDS - T0)) s"
done
cd $OUT && tar czf suite.tgz suite1 suite2 suite1_stdout.txt suite2_stdout.txt && rm -rf suite? suite?_stdout.txt
