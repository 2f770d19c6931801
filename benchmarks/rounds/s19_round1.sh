# Session 19 round 1 (issue #5): HSTU gpu tests of the new tree (session 18's mask._phases and this session's
# scalar block pointers + prescaled operand), then the hstu suite rows through the bench (ours only, first-listed
# configs) in separate processes per tree, two passes:
#   a  = 80904a4 (session 18 round 5's tree), b = 706d0fe (+ mask._phases, session start),
#   n0 = this tree with JAGATTN_HSTU_PRESCALE=0 (scalar block pointers only), n1 = this tree (both).
# old_tree/{a,b}/src = `git archive <sha> src`, carried untracked.
# Call (kind nvidia-h100-x1, carry old_tree): JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s19_round1.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout -s INT 170 python3 -m pytest -q -m gpu tests/test_hstu_triton.py -p no:cacheprovider -rfE \
    2>&1 | tee $OUT/gpu_tests.log | tail -4
echo "gpu tests done $((SECONDS - T0)) s"
for pass in 1 2; do
  for name in a b n0 n1; do
    [ $((SECONDS - T0)) -gt 530 ] && { echo "skip $name$pass (time)"; continue; }
    case $name in a|b) src=old_tree/$name/src; pre=1;; n0) src=src; pre=0;; n1) src=src; pre=1;; esac
    echo "=== $name$pass"
    JAGATTN_HSTU_PRESCALE=$pre PYTHONPATH=$src timeout 75 python3 -m jagattn bench --family hstu --backends triton \
      --json $OUT/$name$pass.json 2>&1 | grep -E "^[A-Za-z].*:|^  triton" | cut -c1-150
  done
done
echo "elapsed $((SECONDS - T0)) s"
