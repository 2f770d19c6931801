# Session 41 round 6 (issue #5): GPU fuzz of the SPEC rule for HSTU with both Gluon kernels at any size
# (JAGATTN_HSTU_GLUON=1; dK/dV through the new 3-D to-the-end boxes), three processes sharing the GPU: random head
# dims, Dq = Dv = 128, and Dq = 64 / Dv = 128; fresh seeds.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s41_round6.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0 JAGATTN_HSTU_GLUON=1
source benchmarks/device_round_env.sh
i=0
for dims in "" "--dims 128,128" "--dims 64,128"; do
  i=$((i + 1))
  PYTHONPATH=src timeout 250 python3 benchmarks/fuzz_spec_rule.py --op hstu --device cuda --scale 16 --isolate \
      --first-seed $((41000 + 1000 * i)) --cases 300 --time-budget 215 $dims > $OUT/fuzz_hstu_$i.log 2>&1 &
done
wait
for i in 1 2 3; do echo "== $i"; grep -v Warn $OUT/fuzz_hstu_$i.log | tail -4 | cut -c1-400; done
echo "elapsed $((SECONDS - T0)) s"
