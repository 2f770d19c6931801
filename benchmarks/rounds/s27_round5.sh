# Session 27 round 5 (issue #4): (1) host time of the attention calls, this tree against session 26's (old_tree/src,
# carried: git archive 7350f2d src), alternated; (2) dQ kernel tiles (benchmarks/rounds/s27_variants.py) on the
# mean-8192 rows and skewed, same process.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s27_round5.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
{
for pass in 1 2; do
  for tree in old_tree/src src; do
    echo "== host, $tree, pass $pass"
    PYTHONPATH=$tree timeout 100 python3 benchmarks/gluon_launch_cost.py -n 2000 --quick 2>&1 | grep "us/call"
  done
done
PYTHONPATH=src timeout 100 python3 benchmarks/gluon_launch_cost.py -n 2000 2>&1 | grep -v Warn | sed -n '/== cProfile of the backward/,$p'
echo "elapsed $((SECONDS - T0)) s"
PYTHONPATH=src timeout 330 python3 benchmarks/src_variant_ab.py --family attention --variants benchmarks/rounds/s27_variants.py \
    --rows causal-mean8192-hkv16,causal-mean8192-hkv4,skewed --repeats 2 --profile --out $OUT 2>&1 | grep -v Warn
echo "elapsed $((SECONDS - T0)) s"
} > $OUT/log.txt 2>&1
grep -v "^ \{20,\}[0-9]" $OUT/log.txt | tail -c 11000
