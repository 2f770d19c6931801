# Session 18 round 4, after the HSTU grid order (kernels now issue/latency-bound, session 18 round 3 ncu):
#  1. hstu_probe: two-warpgroup 128x32 forward / dQ tiles (new EXTRA) and the 64x32 forward again, on B256-N1024,
#     ctx6-w256 and B128-N2048 (issue #5);
#  2. Nsight Compute DRAM / L2 of every gated delta kernel, ours and FLA's, on H16-8seqs (issue #6): does any of
#     our kernels read its inputs from DRAM more than once, as the HSTU grid did?
# Call (kind nvidia-h100-x1, carry .whl): JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s18_round4.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
timeout 60 python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    || echo "wheel install failed"
PYTHONPATH=src timeout 230 python3 benchmarks/hstu_probe.py --out $OUT --deadline 200 --no-gr \
    --candidates fwd:128x32w8s3,fwd:128x32w8s4,fwd:64x32w4s3,dq:128x32w8s3,dq:64x32w4s3 \
    --rows B256-N1024,ctx6-w256,B128-N2048 2>&1 | grep -v Warn | grep -A8 SUMMARY
echo "probe done $((SECONDS - T0)) s"
PYTHONPATH=src:/tmp/site timeout 200 ncu --profile-from-start off --clock-control none --section SpeedOfLight \
    --section MemoryWorkloadAnalysis --section LaunchStats -f -o $OUT/gd python3 benchmarks/ncu_probe.py \
    --family gated_delta --rows H16-8seqs --impls triton,fla 2>&1 | grep -v Warn | tail -3
ncu --import $OUT/gd.ncu-rep --page details > $OUT/gd_details.txt 2>&1; rm -f $OUT/gd.ncu-rep
grep -E "^  [a-zA-Z_].*Context|^=== |Duration|DRAM Throughput|L2 Hit Rate|Compute \(SM\) Throughput|Grid Size|Registers Per" $OUT/gd_details.txt | sed 's/  \+/ /g' | cut -c1-110
echo "elapsed $((SECONDS - T0)) s"
