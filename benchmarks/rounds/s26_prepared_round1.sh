# Prepared in session 25 (issue #6), not run: the state pass's W S with S as bf16 hi + lo (s26_prepared_variants.py,
# s_hilo). (1) same-process A/B with per-kernel times on three rows (src_variant_ab; outputs differ by design: the
# diffs say how much); (2) session 25's K = 64 SPEC miss (final_state 1.05x the allowance) default vs s_hilo.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s26_prepared_round1.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 300 python3 benchmarks/src_variant_ab.py --family gated_delta --repeats 3 --profile --out $OUT \
    --variants benchmarks/rounds/s26_prepared_variants.py --rows gated_delta/H16-8seqs,gated_delta/H16-ragged,gated_delta/H16-1seq \
    2>&1 | grep -v Warn > $OUT/ab.log
grep -E "^row|s_hilo: \{|default:|s_hilo:|kernels of" $OUT/ab.log | cut -c1-400
echo "elapsed $((SECONDS - T0)) s"
PYTHONPATH=src timeout 120 python3 benchmarks/rounds/s25_k64_case.py 2>&1 | grep -v Warn | tail -2
PYTHONPATH=src:benchmarks timeout 150 python3 benchmarks/rounds/s25_k64_case.py --variant benchmarks/rounds/s26_prepared_variants.py s_hilo \
    2>&1 | grep -v Warn | tail -2
echo "elapsed $((SECONDS - T0)) s"
