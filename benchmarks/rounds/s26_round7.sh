# Session 26 round 7 (issue #4): launch order of the Gluon dK/dV kernel on the mean-8192 rows (the two under 1.2x in
# round 4) and the GQA rows: lpt (heaviest key blocks first), slot_major (no head-major grid for GQA), and both
# early_delta again; then the gluon gpu tests with ORDER=lpt forced through the module (bitwise = the Triton kernel).
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s26_round7.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 300 python3 benchmarks/src_variant_ab.py --family attention --repeats 3 --profile --out $OUT \
    --variants benchmarks/rounds/s26_variants.py --only lpt,slot_major,early_delta \
    --rows causal-mean8192-hkv4,causal-mean8192-hkv16,skewed,causal-mean2048-hkv4,causal-mean512-hkv4 \
    2>&1 | grep -v Warn > $OUT/ab.log
grep -E "^row|: \{|default:|lpt:|slot_major:|early_delta:" $OUT/ab.log | cut -c1-120
grep -E "kernels of" $OUT/ab.log | cut -c1-150
echo "elapsed $((SECONDS - T0)) s"
