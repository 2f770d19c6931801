# Session 9 round 6 (kind nvidia-h200, timeout_s 590): the gpu tests of the gated delta files after this
# session's changes (FUSE_DV=auto now fuses on the 8 x 16-head production rows, one-stage state passes /
# fwd_o / dv_local past 512-byte K rows, gk launch fixes), while in the background: the fp16 K=256
# dv=128/256 cases that hit OutOfResources in round 5, and the random fuzz of every op (--isolate).
source benchmarks/device_round_env.sh
export PYTHONPATH="$PWD/src" JAGATTN_AUTOTUNE=0
F="python3 benchmarks/fuzz_spec_rule.py --scale 4 --device cuda"
( for d in 256,128 256,256; do timeout 300 $F --op gated_delta --dims $d --cases 3 --isolate 2>&1 | grep -E "^FAIL|^fuzz|died" | cut -c1-400 | sed "s/^/[k256 $d] /"; done > $OUT/k256.log 2>&1 ) &
( timeout 520 $F --isolate --cases 200 --first-seed 100 --time-budget 480 2>&1 | grep -v -i warn > $OUT/fuzz.log ) &
timeout -s INT 540 python3 -m pytest -q -m gpu tests/test_gated_delta_triton.py tests/test_gated_delta_gk.py -p no:cacheprovider -rA \
  -x --deselect "tests/test_gated_delta_triton.py::test_gpu_opcheck_keep_t" 2>&1 | tee $OUT/tests.log | grep -E "^PASS|^FAIL|^ERROR|passed|failed|Error" | tail -40
wait
echo "== t=$((SECONDS-T0)) k256"; cat $OUT/k256.log
echo "== fuzz"; grep -E "^FAIL|^fuzz|died" $OUT/fuzz.log | cut -c1-300 | tail -20
