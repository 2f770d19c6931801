"""Which of generative-recommenders' (GR) Triton HSTU autotune configs crash or miscompute here.

GR's ``triton_hstu_mha`` raised "CUDA error: an illegal memory access" during its own autotuning in
every run of session 2 (H200, torch 2.11+cu130, Triton 3.6). This script runs GR alone, one config
per child process (``CUDA_LAUNCH_BLOCKING=1``, so a fault is reported at the launch that made it):

- ``fwd i``: the forward with GR's forward list cut to config ``i``;
- ``bwd j``: forward (one fixed forward config) then backward with the backward list cut to ``j``;

each on the bench row B=256 N=1024 (targets 1..20), a 4-sequence batch, and two small contextual +
window batches (C=6, W=256, N=2048; 16 and 12 sequences): the compile specialisations the bench
rows and their check subsets use (see ``CASES``), so the children also fill Triton's cache for a
later timing run on the same machine (``--skip-default`` for a warm-up only). Outputs of the first
sequences are compared with jagattn's fp64 reference (max_rel and rms_rel per tensor, the bench gate
is 3e-2 / 1e-2 for bf16).
Then one child runs GR's unrestricted autotuning on B=256 N=1024 with every benchmarked config
logged before it runs, to see which config the default run dies on.

Usage on the GPU machine, from the repository root, ``peers/gr`` carried::

    PYTHONPATH=src:peers/gr python3 benchmarks/hstu_gr_probe.py [--jobs 16] [--child-timeout 75] [--skip-default]

Writes ``$OUT/gr_probe.json``: per config its outcome, and ``exclude``: exclusion rules (the syntax
of ``jagattn.bench.peers.GR_EXCLUDE_DEFAULT``) for every config that crashed or failed the gate.
GR's files are not modified: the children replace the autotuners' ``configs`` lists.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import torch

H, D, ALPHA = 4, 128, 1.0 / 128
OUT = os.environ.get("OUT", ".")
GATE = (3e-2, 1e-2)  # the bench's bf16 gate: max_rel, rms_rel
FWD_FOR_BWD = dict(m=64, n=64, w=4, s=2)  # forward config used by the backward children
# (B, N, C, W, seed). Triton specialises GR's integer arguments on divisibility by 16, so a batch of
# Z % 16 == 0 sequences (the timed rows) and one of Z % 16 != 0 (the bench's check subsets, e.g. 4, 8
# or 42 sequences) are separate compiles, with and without the contextual/window flags: the four cases
# cover the four, which also fills Triton's cache for a later `jagattn bench` run on the same machine.
CASES = {
    "B256-N1024": (256, 1024, 0, 0, 0),
    "plain-Z4": (4, 1024, 0, 0, 2),
    "ctx6-w256-small": (16, 2048, 6, 256, 1),
    "ctx6-w256-Z12": (12, 2048, 6, 256, 3),
}
PLAIN = [t for t, c in CASES.items() if not c[2] and not c[3]]


def _gr():
    from generative_recommenders import common
    from generative_recommenders.ops.triton import triton_hstu_attention as mod

    common.set_use_runtime_max_seq_len(True)
    return mod


def _case(B, N, C, W, seed):
    import torch

    rng = random.Random(seed)
    lens = [rng.randint(int(0.9 * N), N - 1) for _ in range(B)]
    nt = [rng.randint(1, 20) for _ in lens]
    g = torch.Generator(device="cuda").manual_seed(seed)
    L = sum(lens)
    q, k, v, do = (torch.randn(L, H, D, device="cuda", dtype=torch.bfloat16, generator=g) for _ in range(4))
    cu = torch.tensor([0, *torch.tensor(lens).cumsum(0).tolist()], device="cuda", dtype=torch.int64)
    return dict(N=N, C=C, W=W, q=q, k=k, v=v, do=do, cu=cu, nt=torch.tensor(nt, device="cuda"))


def _errs(got, gold):
    diff = (got.double() - gold).abs()
    mx = float(gold.abs().max())
    rms = float(gold.pow(2).mean().sqrt())
    return dict(
        max_rel=float(diff.max()) / mx if mx else float(diff.max()),
        rms_rel=float(diff.pow(2).mean().sqrt()) / rms if rms else 0.0,
        nonfinite=int((~torch.isfinite(got)).sum()),
    )


def _run_case(mha, case, backward, nseq, stage, tag=""):
    """GR on the whole case, then its first ``nseq`` sequences against the fp64 reference."""
    from jagattn.hstu.reference import hstu_reference

    N, C, W = case["N"], case["C"], case["W"]
    cu, nt = case["cu"], case["nt"]
    q, k, v, do = case["q"], case["k"], case["v"], case["do"]
    stage["name"] = "fwd"
    print("STAGE fwd", tag, flush=True)
    if backward:
        qg, kg, vg = (t.clone().requires_grad_(True) for t in (q, k, v))
        o = mha(N, ALPHA, qg, kg, vg, cu, nt, W, C)
        torch.cuda.synchronize()
        stage["name"] = "bwd"
        print("STAGE bwd", tag, flush=True)
        o.backward(do)
        torch.cuda.synchronize()
        got = [o.detach(), qg.grad, kg.grad, vg.grad]
    else:
        with torch.no_grad():
            got = [mha(N, ALPHA, q, k, v, cu, nt, W, C)]
        torch.cuda.synchronize()
    stage["name"] = "check"
    nseq = min(nseq, cu.numel() - 1)
    e = int(cu[nseq])
    q64, k64, v64 = (t[:e].double().requires_grad_(True) for t in (q, k, v))
    kw = dict(alpha=ALPHA, scale_len=N, num_targets=nt[:nseq], contextual_seq_len=C, max_attn_len=W)
    ref = hstu_reference(q64, k64, v64, cu[: nseq + 1], **kw)
    gold = [ref.detach()]
    if backward:
        gold += list(torch.autograd.grad(ref, (q64, k64, v64), do[:e].double()))
    res = {}
    for name, a, b in zip(("o", "dq", "dk", "dv"), got, gold, strict=False):
        res[name] = _errs(a[:e], b)
    ok = all(r["max_rel"] <= GATE[0] and r["rms_rel"] <= GATE[1] and not r["nonfinite"] for r in res.values())
    return dict(ok=ok, errors=res)


def child(kind, idx):
    """One config of one kernel (``kind`` fwd/bwd) on both cases; prints ``RESULT {json}``."""
    from jagattn.bench.peers import gr_config_fields, gr_config_name

    mod = _gr()
    fwd_all, bwd_all = list(mod._hstu_attn_fwd.configs), list(mod._hstu_attn_bwd.configs)
    if kind == "fwd":
        mod._hstu_attn_fwd.configs = [fwd_all[idx]]
        name = gr_config_name("fwd", fwd_all[idx])
    else:
        pick = [c for c in fwd_all if all(gr_config_fields(c).get(x) == v for x, v in FWD_FOR_BWD.items())]
        mod._hstu_attn_fwd.configs = pick[:1] or fwd_all[:1]
        mod._hstu_attn_bwd.configs = [bwd_all[idx]]
        name = gr_config_name("bwd", bwd_all[idx])
    out = dict(kind=kind, idx=idx, config=name)
    print("CONFIG", name, flush=True)
    stage = {"name": "start"}
    for tag, args in CASES.items():
        case = _case(*args)
        t0 = time.time()
        out[tag] = _run_case(mod.triton_hstu_mha, case, kind == "bwd", 8, stage, tag)
        out[tag]["seconds"] = round(time.time() - t0, 2)
        del case
        torch.cuda.empty_cache()
    print("RESULT " + json.dumps(out), flush=True)


def child_default():
    """GR's full autotune lists on B=256 N=1024 fwd+bwd; each config is logged before it is timed."""
    mod = _gr()
    from jagattn.bench.peers import gr_config_name

    for kind, tuner in (("fwd", mod._hstu_attn_fwd), ("bwd", mod._hstu_attn_bwd)):
        orig = tuner._bench

        def logged(*args, config, _orig=orig, _kind=kind, **kw):
            print("BENCH", gr_config_name(_kind, config), flush=True)
            return _orig(*args, config=config, **kw)

        tuner._bench = logged
    case = _case(256, 1024, 0, 0, 0)
    res = _run_case(mod.triton_hstu_mha, case, True, 8, {"name": ""}, "B256-N1024")
    best = {
        k: str(getattr(t, "best_config", None))
        for k, t in (("fwd", mod._hstu_attn_fwd), ("bwd", mod._hstu_attn_bwd))
    }
    print("RESULT " + json.dumps(dict(default=res, best=best)), flush=True)


def _spawn(args, timeout):
    env = dict(os.environ, CUDA_LAUNCH_BLOCKING="1", PYTHONWARNINGS="ignore")
    t0 = time.time()
    try:
        p = subprocess.run(
            [sys.executable, __file__, *args], capture_output=True, text=True, timeout=timeout, env=env
        )
        rc, text = p.returncode, p.stdout + p.stderr
    except subprocess.TimeoutExpired as exc:
        rc = "timeout"
        text = (
            (exc.stdout or b"").decode(errors="replace")
            if isinstance(exc.stdout, bytes)
            else (exc.stdout or "")
        )
    res = None
    for line in text.splitlines():
        if line.startswith("RESULT "):
            res = json.loads(line[7:])
    stages = [ln for ln in text.splitlines() if ln.startswith(("STAGE", "BENCH", "CONFIG"))]
    err = [ln for ln in text.splitlines() if "Error" in ln or "error" in ln][-3:]
    return dict(args=args, rc=rc, seconds=round(time.time() - t0, 1), result=res, last=stages[-3:], error=err)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--child", nargs=2, metavar=("KIND", "IDX"))
    ap.add_argument("--child-default", action="store_true")
    ap.add_argument("--jobs", type=int, default=16)
    ap.add_argument("--child-timeout", type=float, default=75)
    ap.add_argument("--skip-default", action="store_true")
    ap.add_argument("--default-timeout", type=float, default=60, help="limit of the default-autotune child")
    ap.add_argument(
        "--default-skip-after", type=float, default=1e9, help="skip it when the probe took longer"
    )
    ap.add_argument(
        "--deadline", type=float, default=1e9, help="start no config child after this many seconds"
    )
    a = ap.parse_args()
    if a.child:
        child(a.child[0], int(a.child[1]))
        return
    if a.child_default:
        child_default()
        return

    import triton

    from jagattn.bench.peers import gr_config_fields, gr_config_name

    t0 = time.time()
    mod = _gr()
    fwd_all, bwd_all = list(mod._hstu_attn_fwd.configs), list(mod._hstu_attn_bwd.configs)
    jobs = [("bwd", i) for i in range(len(bwd_all))] + [("fwd", i) for i in range(len(fwd_all))]
    partial = []
    print(f"{len(fwd_all)} fwd + {len(bwd_all)} bwd GR configs, {a.jobs} at a time", flush=True)

    def one(job):
        if time.time() - t0 > a.deadline:
            return dict(args=["--child", *map(str, job)], rc="skipped", result=None, config="", outcome="skipped",
                        seconds=0, last=[], error=[])  # fmt: skip
        r = _spawn(["--child", job[0], str(job[1])], a.child_timeout)
        cfgs = fwd_all if job[0] == "fwd" else bwd_all
        r["config"] = gr_config_name(job[0], cfgs[job[1]])
        res = r["result"]
        if res is None:
            r["outcome"] = f"crash rc={r['rc']} at {r['last'][-1] if r['last'] else '?'}"
        else:
            bad = [t for t in CASES if not res[t]["ok"]]
            r["outcome"] = "ok" if not bad else "wrong " + ",".join(bad)
        partial.append(r)
        with open(os.path.join(OUT, "gr_probe_partial.json"), "w") as f:
            json.dump(partial, f, indent=1)
        print(
            f"[{time.time() - t0:6.1f}s] {r['config']:44s} {r['outcome']} ({r['seconds']} s) {r['error'][-1:] if r['result'] is None else ''}",
            flush=True,
        )
        return r

    with ThreadPoolExecutor(a.jobs) as ex:
        results = list(ex.map(one, jobs))
    # A config is excluded when it crashed or failed the gate on the plain row; failing only the
    # contextual+window case counts when some other config of the same kernel passes it (else it is
    # GR's mask semantics, not a config fault, and the bench gate reports it per row).
    ctx = [t for t in CASES if t not in PLAIN]

    def passed(r, tags):
        return all(r["result"][t]["ok"] for t in tags)

    ctx_ok = {
        k: any(r["result"] and passed(r, ctx) for r in results if r["args"][1] == k) for k in ("fwd", "bwd")
    }
    excluded = [
        r["config"] for r in results
        if r["outcome"] != "skipped"
        and (r["result"] is None or not passed(r, PLAIN) or (ctx_ok[r["args"][1]] and not passed(r, ctx)))
    ]  # fmt: skip
    default = None
    if time.time() - t0 > a.default_skip_after:
        print(f"default autotune run skipped: {time.time() - t0:.0f} s > --default-skip-after", flush=True)
    elif not a.skip_default:
        default = _spawn(["--child-default"], a.default_timeout)
        print(
            "default autotune run:",
            json.dumps({k: default[k] for k in ("rc", "seconds", "last", "error")}),
            flush=True,
        )
        if default["result"]:
            print("default result:", json.dumps(default["result"])[:2000], flush=True)
        else:  # died: the config being timed when it did (its last BENCH line) is excluded too
            bench = [ln.split(" ", 1)[1] for ln in default["last"] if ln.startswith("BENCH ")]
            if bench and bench[-1] not in excluded:
                excluded.append(bench[-1])
                default["excluded_from_this_run"] = bench[-1]
    doc = dict(
        gpu=torch.cuda.get_device_name(), torch=torch.__version__, triton=triton.__version__,
        cuda=torch.version.cuda, gr_commit=os.environ.get("JAGATTN_GR_COMMIT", ""),
        jagattn_sha=os.environ.get("JAGATTN_GIT_SHA", ""), command=" ".join(sys.argv),
        fwd_for_bwd_children=FWD_FOR_BWD, gate=GATE, seconds=round(time.time() - t0, 1),
        configs=results, default_run=default, exclude=",".join(excluded),
        fields={gr_config_name(k, c): gr_config_fields(c) for k, cs in (("fwd", fwd_all), ("bwd", bwd_all)) for c in cs},
    )  # fmt: skip
    with open(os.path.join(OUT, "gr_probe.json"), "w") as f:
        json.dump(doc, f, indent=1)
    print("EXCLUDE=" + doc["exclude"], flush=True)


if __name__ == "__main__":
    main()
