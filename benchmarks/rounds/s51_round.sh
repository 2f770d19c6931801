# Session 51: (fuzz) a GPU fuzz of the SPEC rule with the code as it stands (OVERLAP on by default since session 50;
# the last gated delta GPU fuzz was session 36's, HSTU's session 42's): five processes at once sharing the GPU (the
# fp64 references are host-bound), fresh seeds 51000+. (longest) chunk_bwd.LONGEST_FIRST off/on with OVERLAP_ORDER
# dhu_first on the five suite rows (session 51 round 3 saw ragged -0.04 ms, 8seqs +0.02).
# (pipe, pipefast, pipegraph) chunk_fwd.PIPE, the pipelined forward of few long chains: slower, reverted; these modes
# need benchmarks/rounds/s51_pipe.diff applied (git apply), which also restores benchmarks/gd_pipe_graph.py.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s51_round.sh [fuzz|longest|pipe|pipefast|pipegraph|host]
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
if [ "${1:-fuzz}" = fuzz ]; then
  run() { PYTHONPATH=src timeout 330 python3 benchmarks/fuzz_spec_rule.py --device cuda --isolate --cases 400 \
      --time-budget 280 "$@"; }
  run --op gated_delta --scale 4 --first-seed 51000 --dtype bf16 > $OUT/fuzz_gd_bf16.log 2>&1 &
  run --op gated_delta --scale 4 --first-seed 51500 > $OUT/fuzz_gd.log 2>&1 &
  run --op gated_delta_gk --scale 4 --first-seed 51000 > $OUT/fuzz_gk.log 2>&1 &
  run --op hstu --scale 16 --first-seed 51000 > $OUT/fuzz_hstu.log 2>&1 &
  run --op attention --scale 4 --first-seed 51000 > $OUT/fuzz_attention.log 2>&1 &
  wait
  for f in gd_bf16 gd gk hstu attention; do echo "== $f"; grep -v Warn $OUT/fuzz_$f.log | grep -v "^CASE" \
      | tail -8 | cut -c1-500; done
  echo "fuzz elapsed $((SECONDS - T0)) s"
fi
if [ "${1:-fuzz}" = longest ]; then
  mkdir -p $OUT/longest
  JAGATTN_GD_OVERLAP_ORDER=dhu_first PYTHONPATH=src timeout 400 python3 benchmarks/gd_switch_ab.py \
      --switch jagattn.gated_delta.triton.chunk_bwd:LONGEST_FIRST=off,on \
      --rows H16-ragged,H16-8seqs,H16-64seqs,H32-8seqs,H16-1seq --repeats 3 --out $OUT/longest 2>&1 \
      | tee $OUT/longest.txt | grep -E "^H|fwd [0-9]" | tail -40
  echo "longest rc=$? elapsed $((SECONDS - T0)) s"
fi
if [ "${1:-fuzz}" = pipe ]; then
  # chunk_fwd.PIPE (the pipelined forward of few long chains): pieces off / 4 / 8 / 16 on H16-1seq (the only suite
  # row in its regime), then the gpu tests that run it ("auto" pipelines the production tests' few-head batches)
  mkdir -p $OUT/pipe
  PYTHONPATH=src timeout 240 python3 benchmarks/gd_switch_ab.py \
      --switch jagattn.gated_delta.triton.chunk_fwd:PIPE=off,4,8,16 \
      --rows H16-1seq --repeats 3 --out $OUT/pipe 2>&1 | tee $OUT/pipe.txt | grep -v "^        0\.0" | tail -60
  echo "pipe ab rc=$? elapsed $((SECONDS - T0)) s"
  JAGATTN_POISON=1 PYTHONPATH=src timeout $((590 - (SECONDS - T0))) python3 -m pytest -q -p no:cacheprovider -n 4 \
      tests/test_gated_delta_triton.py -m gpu -k "pipe_streams or production or slow_gates or opcheck or compile" \
      2>&1 | tee $OUT/pipe_tests.txt | grep -E "passed|failed|FAILED|Error" | tail -15
  echo "pipe tests rc=$? elapsed $((SECONDS - T0)) s"
fi
if [ "${1:-fuzz}" = pipefast ]; then
  # round 6 showed the pipelined forward host-bound (P 4: fwd 1.32 -> 2.0 ms while its kernels sum as before): the
  # same A/B with the fast launch path (JAGATTN_FAST_LAUNCH=1) for both sides, 2 / 3 / 4 pieces
  mkdir -p $OUT/pipefast
  JAGATTN_FAST_LAUNCH=1 PYTHONPATH=src timeout 240 python3 benchmarks/gd_switch_ab.py \
      --switch jagattn.gated_delta.triton.chunk_fwd:PIPE=off,2,3,4,8 \
      --rows H16-1seq --repeats 3 --out $OUT/pipefast 2>&1 | tee $OUT/pipefast.txt | grep -E "^H|fwd [0-9]" | tail -30
  echo "pipefast rc=$? elapsed $((SECONDS - T0)) s"
fi
if [ "${1:-fuzz}" = pipegraph ]; then
  PYTHONPATH=src timeout 300 python3 benchmarks/gd_pipe_graph.py --pieces off,2,4,8 2>&1 | tee $OUT/pipegraph.txt \
      | grep -v Warn | tail -12
  echo "pipegraph rc=$? elapsed $((SECONDS - T0)) s"
fi
if [ "${1:-fuzz}" = host ]; then
  # the host time per call of the public function against its GPU time, three suite rows; a cProfile of the first
  PYTHONPATH=src timeout 240 python3 benchmarks/gd_host_time.py --rows H16-8seqs,H16-1seq,H16-ragged 2>&1 \
      | tee $OUT/host.txt | grep -v Warn | head -45
  echo "host rc=$? elapsed $((SECONDS - T0)) s"
fi
