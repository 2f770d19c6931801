# Session 40 round 2 (issue #5): the persistent Gluon dK/dV schedule (bwd_gluon.PERSIST). (1) gpu tests: persistent
# dk / dv bitwise the per-item kernel's, the refactored per-item kernel against the Triton one, isolation; (2) same
# process A/B on B256 / B128 with per-kernel times; (3) session 39's kernel (HEAD's bwd_gluon.py) in another process,
# to see that the refactor into item helpers did not change the per-item kernel's time.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s40_round2.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 240 python3 -m pytest -q -x -m gpu tests/test_hstu_triton.py -p no:cacheprovider \
    -k "persistent_dkdv or (test_gpu_gluon and dkdv) or nonfinite_sequence_isolated" 2>&1 | tail -15
echo "tests done $((SECONDS - T0)) s"
PYTHONPATH=src timeout 260 python3 benchmarks/src_variant_ab.py --family hstu --variants benchmarks/rounds/s40_persist_variants.py \
    --only persist --rows B256-N1024,B128-N2048 --repeats 3 --profile --out $OUT/ab 2>&1 | grep -v Warn | cut -c1-400
echo "ab done $((SECONDS - T0)) s"
rm -rf /tmp/oldsrc && cp -r src /tmp/oldsrc && cp benchmarks/rounds/s40_old_bwd_gluon.py /tmp/oldsrc/jagattn/hstu/triton/bwd_gluon.py
echo 'VARIANTS = {}' > /tmp/empty_variants.py
PYTHONPATH=/tmp/oldsrc timeout 150 python3 benchmarks/src_variant_ab.py --family hstu --variants /tmp/empty_variants.py \
    --rows B256-N1024 --repeats 3 --profile --out $OUT/old 2>&1 | grep -v Warn | cut -c1-400
echo "elapsed $((SECONDS - T0)) s"
