# Session 9, after the GPU fuzz (s9_round2) met an illegal memory access in the per-key-gate backward
# (_gated_delta_bwd_gk_wy_kernel, an invalid __shared__ read, dk=dv=16, bf16; the CPU interpreter
# cannot see it): (1) compute-sanitizer on that case (every kernel it names), (2) the case under launch
# variants of the WY kernel, (3) a head-dim sweep of every op on the GPU (the fuzz with fixed --dims,
# child processes that survive a dead CUDA context), 8 at a time.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s9_round3.sh   (kind nvidia-h200, timeout_s 590)
source benchmarks/device_round_env.sh
export PYTHONPATH="$PWD/src" JAGATTN_AUTOTUNE=0
F="python3 benchmarks/fuzz_spec_rule.py --scale 4 --device cuda"
echo "== t=$((SECONDS-T0)) sanitizer"
timeout 120 compute-sanitizer --print-limit 50 $F --op gated_delta_gk --seed 0 > $OUT/sanitizer.log 2>&1
grep -E "^========= +at |Invalid" $OUT/sanitizer.log | sort | uniq -c | head -20
echo "== t=$((SECONDS-T0)) WY variants"
M=jagattn.gated_delta.triton.chunk_gk
for v in "" "$M.WY_BC_MIN=32" "$M.WY_BV=16" "$M.WY_BV=32" "$M.WY_WARPS=4" "$M.WY_BC_MIN=32 --set $M.WY_BV=32"; do
  echo "-- ${v:-default}"; timeout 60 $F --op gated_delta_gk --seed 0 ${v:+--set $v} 2>&1 | grep -E "^FAIL|^fuzz" | cut -c1-300
done
echo "== t=$((SECONDS-T0)) dims sweep"
{
  for d in 16,16 16,32 16,64 16,128 32,16 32,32 32,64 64,16 64,64 64,128 128,16 128,64 128,128 128,256 256,64 256,256 96,80 64,48; do
    echo "gated_delta $d"; echo "gated_delta_gk $d"; done
  for d in 16,16 32,32 64,64 96,96 128,128 256,256 64,128 128,64 256,128 40,16 80,80 192,192; do echo "attention $d"; done
  for d in 16,16 32,32 64,64 128,128 256,256 64,128 128,32 48,80 96,96 200,200; do echo "hstu $d"; done
} | xargs -P 8 -L 1 sh -c 'timeout 300 '"$F"' --op $0 --dims $1 --cases 3 --isolate 2>&1 | grep -E "^FAIL|^fuzz|died" | cut -c1-400 | sed "s/^/[$0 $1] /"' \
  | tee $OUT/sweep.log | grep -v " 0/3 failed"
echo "== t=$((SECONDS-T0)) done"
