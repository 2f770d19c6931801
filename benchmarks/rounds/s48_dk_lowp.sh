# Session 48: dk between dqkwg and wy in bf16 (chunk_bwd.DK_LOWP="l2n") against fp32, same process (gd_switch_ab:
# outputs vs the fp32 run, alternated timings, per-kernel profile); then the gpu tests that take that path (HV == H,
# l2norm, bf16) with it forced on, against the reference under the SPEC rule.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s48_dk_lowp.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
mkdir -p $OUT/ab
PYTHONPATH=src timeout ${AB_LIMIT:-200} python3 benchmarks/gd_switch_ab.py \
    --switch jagattn.gated_delta.triton.chunk_bwd:DK_LOWP=off,l2n --rows ${ROWS:-H16-8seqs,H16-1seq,H16-ragged} \
    --repeats 2 --out $OUT/ab 2>&1 | tee $OUT/ab.txt | grep -v "^        0\.0" | tail -60
echo "ab rc=$? elapsed $((SECONDS - T0)) s"
JAGATTN_GD_DK_LOWP=l2n PYTHONPATH=src timeout ${TEST_LIMIT:-330} python3 -m pytest -q -p no:cacheprovider -n 4 \
    tests/test_gated_delta_triton.py -m gpu -k "hv_eq_h or production_bf16" -rfE > $OUT/tests.txt 2>&1
echo "tests rc=$? $(grep -E ' passed| failed| error' $OUT/tests.txt | tail -1)"
grep -E "^FAILED|^ERROR|exceeds|allowance" $OUT/tests.txt | head -20
echo "elapsed $((SECONDS - T0)) s"
