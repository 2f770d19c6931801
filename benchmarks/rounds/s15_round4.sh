# Session 15, round 4 (kind nvidia-h200): the fp32 route again, without round 3's contention. (a) its gpu
# tests alone, then the existing fp32 / D=256 ones; (b) GPU fuzz of tiny batches with the output gradients
# rounded to the outputs' dtypes for the gold too (--rounded-grads; round 3's harness gave the gold exact
# fp64 output gradients, under which even the fp32 reference fails the rule on some one-token batches),
# route on (default) and off; every failure says whether the fp32 reference passes; (c) gated delta bf16 at
# K=128/256 with the route (default grads); (d) cost per call, and the first routed gated delta call
# (compiles the fp32 kernels) vs the first bf16 one, each in a fresh process with an empty Triton cache.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s15_round4.sh
export OUT=${OUT:-$PWD/.device-out} JAGATTN_AUTOTUNE=0
source benchmarks/device_round_env.sh
PYTHONPATH=src timeout 240 python3 -m pytest -q -m gpu -n 4 tests/test_fp32_route.py 2>&1 | grep -v -i warn | tail -30 | tee $OUT/gpu_tests.log
F="python3 benchmarks/fuzz_spec_rule.py --device cuda --isolate"
job() { set -- $1; m=$1; shift; JAGATTN_SMALL_FP32=$m PYTHONPATH=src timeout 200 $F --op $1 --first-seed $2 --cases 60 --scale $3 --time-budget 170 ${@:4} 2>&1 | grep -E "^FAIL|^fuzz|Error" | cut -c1-460 | sed "s/^/[$m $*] /"; }
export -f job; export F
printf '%s\n' "auto attention 6000 1 --cap-len 2 --rounded-grads" "off attention 6000 1 --cap-len 2 --rounded-grads" \
  "auto hstu 6100 1 --cap-len 3 --rounded-grads" "off hstu 6100 1 --cap-len 3 --rounded-grads" \
  "auto gated_delta 6000 1 --cap-len 2 --rounded-grads --dtype bf16" "off gated_delta 6000 1 --cap-len 2 --rounded-grads --dtype bf16" \
  "auto gated_delta 5000 4 --dtype bf16 --dims 128,64" "auto gated_delta 5100 4 --dtype bf16 --dims 256,128" \
  | xargs -P 8 -d '\n' -n 1 bash -c 'job "$1"' _ > $OUT/fuzz.log 2>&1
cat $OUT/fuzz.log
PYTHONPATH=src timeout 120 python3 -m pytest -q -m gpu "tests/test_hstu_triton.py::test_gpu_fp16_and_d256" "tests/test_attention_triton.py::test_gpu_fp32_forward" 2>&1 | tail -3
PYTHONPATH=src timeout 150 python3 benchmarks/fp32_route_cost.py --iters 100 2>&1 | tee $OUT/cost.log
for m in off auto; do export TRITON_CACHE_DIR=/tmp/tc_$m; t0=$SECONDS
  JAGATTN_SMALL_FP32=$m PYTHONPATH=src timeout 200 python3 -c "
import torch, torch.nn.functional as F, jagattn
from jagattn import testing
g=testing.generator(0); t=6
q,k,v=(testing.randn([t,2,128],dtype=torch.bfloat16,device='cuda',generator=g).requires_grad_() for _ in 'qkv')
gg=F.logsigmoid(testing.randn([t,2],device='cuda',generator=g)); b=torch.sigmoid(testing.randn([t,2],device='cuda',generator=g))
o,_=jagattn.gated_delta_rule(q,k,v,gg,b,cu_seqlens=testing.cu_seqlens([3,2,1],'cuda'),use_qk_l2norm=True); o.float().sum().backward(); torch.cuda.synchronize()"
  echo "first gated delta fwd+bwd call, route $m, cold Triton cache: $((SECONDS - t0)) s" | tee -a $OUT/cost.log; done
echo "elapsed $((SECONDS - T0)) s"
