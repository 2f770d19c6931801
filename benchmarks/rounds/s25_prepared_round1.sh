# Prepared in session 24 (issue #6), not run: dhu's dS store address built as one pointer (benchmarks/rounds/
# s25_prepared_variants.py, dhu_ptr) against the default, same process, with per-kernel times; the gradients must be
# bitwise the default's. Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s25_prepared_round1.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 400 python3 benchmarks/src_variant_ab.py --family gated_delta --repeats 3 --profile --out $OUT \
    --variants benchmarks/rounds/s25_prepared_variants.py --rows gated_delta/H16-8seqs,gated_delta/H16-ragged,gated_delta/H16-1seq \
    2>&1 | grep -v Warn | tee $OUT/ab.log | grep -v "^      " | cut -c1-200
echo "elapsed $((SECONDS - T0)) s"
