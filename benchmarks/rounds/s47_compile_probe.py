"""Session 47 probe: tests/test_compile.py::test_compile_fullgraph_auto_dynamic failed on cuda for all four ops
(compiled != eager by ~1 ulp; passes on CPU). For each op and batch: which eager variant (fp32 route forced on /
off, eager fast path on/off) the compiled result equals bit for bit, and whether eager repeats itself."""
import sys

import torch

sys.path.append("tests")
import test_compile as tc  # noqa: E402

from jagattn._core import library, precision  # noqa: E402


def same(a, b):
    return all(torch.equal(x, y) for x, y in zip(tc._flat(a), tc._flat(b), strict=True))


for op in tc.OPS:
    fn = tc._call(op)
    for dyn in (True, False):
        precision.SMALL_FP32 = "auto"
        comp = torch.compile(fn, fullgraph=True, dynamic=dyn, backend="eager")
        for lengths, seed in (([5, 9, 3], 0), ([12, 2, 30, 7], 1), ([40] * 6, 2)):
            args = tc._inputs(op, lengths, seed, "cuda")
            with torch.no_grad():
                precision.SMALL_FP32 = "auto"
                c = comp(*args)
                e = fn(*args)
                e2 = fn(*args)
                res = {"eager==eager": same(e, e2), "comp==eager": same(c, e)}
                for mode in ("on", "off"):
                    precision.SMALL_FP32 = mode
                    res[f"comp==eager[{mode}]"] = same(c, fn(*args))
                    res[f"eager==eager[{mode}]"] = same(e, fn(*args))
                precision.SMALL_FP32 = "auto"
                library.EAGER_FAST = False
                res["comp==eager[nofast]"] = same(c, fn(*args))
                res["eager==eager[nofast]"] = same(e, fn(*args))
                library.EAGER_FAST = True
            print(op, "dynamic" if dyn else "static", lengths, res, flush=True)
        torch._dynamo.reset()
