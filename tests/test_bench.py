"""The benchmark CLI end to end on the CPU (smoke suite), plus its FLOP counts and suite data.

The end-to-end tests call ``jagattn.bench.cli.main`` exactly as ``python -m jagattn bench`` does,
read the JSON back, and check that a deliberately wrong implementation is caught by the
correctness gate before timing and never reported as a win.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import random
import time

import pytest
import torch

import jagattn
from jagattn.bench import cli, clocks, flops, harness, impls, suites
from jagattn.bench.cases import FAMILIES
from jagattn.bench.impls import Impl, Prepared

try:
    import matplotlib  # noqa: F401

    HAS_MPL = True
except ImportError:
    HAS_MPL = False


class WrongScale(Impl):
    """A 'peer' whose attention output is 5% too large: the gate must fail it."""

    name = "wrong_scale"
    family = "attention"

    def prepare(self, p):
        fam = FAMILIES["attention"]
        return Prepared(lambda t: fam.call(p, t, "reference") * 1.05, label="test")


class WrongLastRow(Impl):
    """A subtler bug: the last token's output of every gated-delta batch is replaced by zeros."""

    name = "wrong_last_row"
    family = "gated_delta"

    def prepare(self, p):
        fam = FAMILIES["gated_delta"]

        def fn(t):
            o = fam.call(p, t, "reference")
            keep = torch.ones(o.shape[0], 1, 1, dtype=o.dtype)
            keep[-1] = 0
            return o * keep

        return Prepared(fn)


class RightButSlow(Impl):
    """A correct 'peer' (the reference plus a sleep): it, not the faster wrong one, is the best peer."""

    name = "right_but_slow"
    family = "attention"

    def prepare(self, p):
        fam = FAMILIES["attention"]

        def fn(t):
            time.sleep(0.002)
            return fam.call(p, t, "reference")

        return Prepared(fn)


def _run(tmp_path, *args: str) -> tuple[int, dict]:
    out = tmp_path / "bench.json"
    rc = cli.main(["--suite", "smoke", "--json", str(out), "--cpu-reps", "1", "--device", "cpu", *args])
    return rc, json.loads(out.read_text())


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory):
    """One CLI run of the whole smoke suite: the reference, one correct and two wrong 'peers'."""
    tmp = tmp_path_factory.mktemp("bench")
    png = tmp / "bench.png"
    buf = io.StringIO()
    with (
        impls.extra_peer(WrongScale()),
        impls.extra_peer(WrongLastRow()),
        impls.extra_peer(RightButSlow()),
        contextlib.redirect_stdout(buf),
    ):
        backends = "reference,wrong_scale,wrong_last_row,right_but_slow"
        rc, doc = _run(tmp, "--family", "all", "--backends", backends, "--plot", str(png))
    return {"rc": rc, "doc": doc, "printed": buf.getvalue(), "png": png}


def test_smoke_json_provenance_and_rows(smoke_run):
    doc = smoke_run["doc"]
    prov = doc["provenance"]
    for key in ("date_utc", "command", "jagattn", "git_sha", "torch", "triton", "python", "device", "gpu"):
        assert key in prov, key
    assert prov["jagattn"] == jagattn.__version__
    assert prov["gpu"] is None and prov["device"] == "cpu"
    assert prov["command"].startswith("jagattn bench --suite smoke")
    assert doc["settings"]["bwd"] == "fwd+bwd minus fwd" and doc["settings"]["dtype"] == "fp16"

    rows = {(r["family"], r["row"]): r for r in doc["rows"]}
    assert set(rows) == {(r.family, r.name) for r in suites.all_rows("smoke")}
    assert not doc["failed_rows"] and not doc["skipped_rows"]
    for r in rows.values():
        assert r["config"].startswith(f"{len(r['lengths'])}seqs T={sum(r['lengths'])} [")
        assert r["check"]["ran"], r["check"]
        assert "every input gradient" in r["check"]["compared"]
        ref = r["impls"]["reference"]
        assert ref["kind"] == "jagattn"
        assert ref["status"] == "ok" and ref["gate"] == "pass", ref
        row = next(x for x in suites.all_rows("smoke") if x.name == r["row"])
        grads = FAMILIES[r["family"]].build(row, "cpu", torch.float16).grad_names
        assert set(ref["errors"]) == {"o"} | {"d" + n for n in grads}
        assert 0 < ref["max_rel"] < 0.01
        assert set(ref["ms"]) == {"fwd", "fwdbwd", "bwd"}
        assert ref["ms"]["fwd"] > 0 and ref["ms"]["fwdbwd"] > 0
        assert r["flops"]["fwd"] > 0
        if r["family"] == "attention":
            assert r["flops"]["pairs"] == flops.attention_pairs(
                r["lengths"], r["lengths"], causal=r["params"]["causal"], window=tuple(r["params"]["window"])
            )
            assert ref["rate"]["fwd"] == pytest.approx(r["flops"]["fwd"] / (ref["ms"]["fwd"] * 1e-3) / 1e12)


def test_smoke_records_no_clock_on_a_cpu(smoke_run):
    doc = smoke_run["doc"]
    assert doc["clock_sampling"] == "not a CUDA device"
    for r in doc["rows"]:
        for e in r["impls"].values():
            assert clocks.WINDOWS not in e and "clock" not in e, e
    assert "SM clock" not in smoke_run["printed"]


def test_clock_samples_parse_summarize_and_describe():
    text = (
        "2026/11/28 08:07:02.090, 1635, Active\n2026/11/28 08:07:02.190, 1680, Active\n"
        "2026/11/28 08:07:02.290, 1980, Not Active\n[N/A], [N/A], [N/A]\n2026/11/28 08:07"
    )
    samples = clocks.parse(text)
    assert len(samples) == 3 and samples[0][1:] == (1635.0, True) and samples[2][1:] == (1980.0, False)
    t0 = samples[0][0]
    assert samples[1][0] - t0 == pytest.approx(0.1, abs=1e-3)
    c = clocks.summarize(samples, t0, t0 + 0.15)
    assert c == {"sm_mhz_median": 1657.5, "sm_mhz_min": 1635.0, "power_capped": 1.0, "samples": 2}
    assert clocks.summarize(samples, t0 + 1, t0 + 2) is None
    three = clocks.summarize(samples, t0, t0 + 1)
    assert three["power_capped"] == pytest.approx(2 / 3) and three["sm_mhz_median"] == 1680
    line = clocks.describe({"fwd": three, "fwdbwd": c})
    assert line == (
        "SM clock while timed: fwd 1680 MHz (min 1635, power-capped 67%); fwdbwd 1658 MHz (min 1635, power-capped 100%)"
    )
    assert clocks.describe({}) == ""


def test_clock_sampler_with_a_fake_nvidia_smi(tmp_path, monkeypatch):
    # the sampler end to end on a CPU machine: a stand-in nvidia-smi that answers the field probe and then prints a
    # sample every 20 ms; the harness's phase windows become clock summaries, entries without windows stay as they are
    smi = tmp_path / "nvidia-smi"
    smi.write_text(
        "#!/bin/sh\n"
        'case "$*" in\n'
        '  *-lms*) while true; do echo "$(date +"%Y/%m/%d %H:%M:%S.%3N"), 1755, Active"; sleep 0.02; done ;;\n'
        '  *clocks_event_reasons*) echo "Not Active" ;;\n'
        "  *) exit 1 ;;\n"
        "esac\n"
    )
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setattr(clocks, "_gpu_id", lambda device: "0")
    sampler = clocks.Sampler().start(torch.device("cuda", 0))
    assert sampler.why_not is None
    t0 = time.time()
    time.sleep(0.6)
    t1 = time.time()
    rows = [{"impls": {"triton": {clocks.WINDOWS: {"fwdbwd": [t0, t1]}}, "peer": {"ms": {}}}}, {"error": "x"}]
    sampler.fill(rows)
    ours = rows[0]["impls"]["triton"]
    assert clocks.WINDOWS not in ours and rows[0]["impls"]["peer"] == {"ms": {}}
    c = ours["clock"]["fwdbwd"]
    assert c["sm_mhz_median"] == 1755 and c["power_capped"] == 1.0 and c["samples"] >= 3, c

    # switched off, or a bad switch value
    monkeypatch.setenv("JAGATTN_BENCH_CLOCKS", "0")
    assert clocks.Sampler().start(torch.device("cuda", 0)).why_not == "JAGATTN_BENCH_CLOCKS=0"
    monkeypatch.setenv("JAGATTN_BENCH_CLOCKS", "yes")
    with pytest.raises(ValueError, match="JAGATTN_BENCH_CLOCKS"):
        clocks.Sampler().start(torch.device("cuda", 0))
    monkeypatch.delenv("JAGATTN_BENCH_CLOCKS")

    # no nvidia-smi at all: nothing sampled, the windows dropped
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    sampler = clocks.Sampler().start(torch.device("cuda", 0))
    assert sampler.why_not == "no nvidia-smi on PATH"
    rows = [{"impls": {"triton": {clocks.WINDOWS: {"fwd": [t0, t1]}}}}]
    sampler.fill(rows)
    assert rows[0]["impls"]["triton"] == {}


def test_smoke_wrong_implementations_fail_the_gate(smoke_run):
    doc, printed = smoke_run["doc"], smoke_run["printed"]
    assert smoke_run["rc"] == 1, "a failing implementation must make the exit status 1"
    rows = {(r["family"], r["row"]): r for r in doc["rows"]}
    for key, name in (
        (("attention", "smoke-causal-gqa"), "wrong_scale"),
        (("attention", "smoke-window"), "wrong_scale"),
        (("gated_delta", "smoke-gdn"), "wrong_last_row"),
    ):
        bad = rows[key]["impls"][name]
        assert bad["kind"] == "peer"
        assert bad["gate"] == "FAIL" and bad["status"] == "FAILED", bad
        assert "o" in bad["gate_failed_on"], bad
        assert bad["ms"]["fwd"] > 0, "a failing implementation is still timed, and shown as failed"
        assert all(v is None for v in bad["speedup_vs_best_peer"].values())
        assert all(v is None for v in doc["summary"][key[0]]["impls"][name]["rate_geomean"].values())
    for key in (("attention", "smoke-causal-gqa"), ("attention", "smoke-window")):
        r = rows[key]
        good = r["impls"]["right_but_slow"]
        assert good["status"] == "ok"
        # the failing peer is never the best peer, even when it is faster than the correct one
        assert {v["impl"] for v in r["best_peer"].values()} == {"right_but_slow"}
        ref = r["impls"]["reference"]
        assert ref["speedup_vs_best_peer"]["fwd"] == pytest.approx(good["ms"]["fwd"] / ref["ms"]["fwd"])
    assert rows[("gated_delta", "smoke-gdn")]["best_peer"] == {}
    assert "FAIL(" in printed and "failing implementations:" in printed
    assert "attention/smoke-causal-gqa:wrong_scale" in printed


def test_smoke_png(smoke_run):
    png, doc = smoke_run["png"], smoke_run["doc"]
    if not HAS_MPL:
        assert not png.exists() and doc["plot"] is None
        pytest.skip("matplotlib not installed: PNG not written, as documented (install the 'bench' extra)")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert doc["plot"] == str(png)


def test_smoke_cli_every_jagattn_backend_forward_gate(tmp_path):
    """The smoke suite's correctness gate through every jagattn backend available here (reference;
    Triton under the interpreter when TRITON_INTERPRET=1), forward only and untimed to stay fast
    (the kernels' own tests check their gradients): all must pass."""
    rc, doc = _run(tmp_path, "--backends", "jagattn", "--mode", "fwd", "--no-timing")
    ran = 0
    for r in doc["rows"]:
        assert r["check"]["ran"] and r["check"]["compared"].endswith("(o)")
        for name, e in r["impls"].items():
            if e["status"] == "n/a":
                continue
            ran += 1
            assert e.get("gate") == "pass" and e["status"] == "ok", (r["family"], r["row"], name, e)
            assert "ms" not in e
    assert ran >= len(doc["rows"])  # at least the reference everywhere
    assert rc == 0


def test_cli_bad_arguments(capsys):
    assert cli.main(["--family", "nope"]) == 2
    assert "unknown family" in capsys.readouterr().err
    assert cli.main(["--suite", "no-such-row"]) == 2
    assert "rows:" in capsys.readouterr().err
    assert cli.main(["--backends", "nosuchpeer"]) == 2
    assert "unknown implementation" in capsys.readouterr().err


def test_cli_list_and_row_selection(capsys):
    assert cli.main(["--list", "--suite", "causal-mean8192-hkv4,hstu/B64-N4096"]) == 0
    out = capsys.readouterr().out
    assert "attention/causal-mean8192-hkv4" in out and "hstu/B64-N4096" in out
    assert "gated_delta/" not in out.split("attention:")[0]


def test_suites_match_benchmarks_md():
    rows = suites.all_rows("default")
    by_fam = {f: [r for r in rows if r.family == f] for f in suites.FAMILIES}
    assert len(by_fam["attention"]) == 9 and len(by_fam["hstu"]) == 5 and len(by_fam["gated_delta"]) == 5
    assert len({r.key for r in rows}) == len(rows)
    for r in by_fam["attention"]:
        lengths = suites.draw_lengths(*r.lengths, seed=r.seed)
        assert sum(lengths) == 32768, r.name
        assert r.params["hq"] == 16 and r.params["d"] == 128 and r.params["dv"] == 128
        if r.lengths[0] == "fill_uniform":
            lo, hi = r.lengths[1]["lo"], r.lengths[1]["hi"]
            assert all(lo <= n <= hi for n in lengths), (r.name, min(lengths), max(lengths))
        assert lengths == suites.draw_lengths(*r.lengths, seed=r.seed), "seeded"
    skewed = suites.draw_lengths(*next(r for r in rows if r.name == "skewed").lengths, seed=1)
    assert sum(skewed) == 32768 and sum(n <= 256 for n in skewed) > 0.75 * len(skewed)
    for r in by_fam["hstu"]:
        lengths = suites.draw_lengths(*r.lengths, seed=r.seed)
        assert max(lengths) <= r.params["max_seq_len"]
    for r in by_fam["gated_delta"]:
        assert sum(suites.draw_lengths(*r.lengths, seed=r.seed)) == 32768
    assert suites.describe_lengths([296, 571, 360]) == "3seqs T=1227 [296..571] avg=409"


def test_attention_pairs_match_the_reference_mask():
    from jagattn.attention.reference import visible_mask

    rng = random.Random(3)
    for _ in range(30):
        lq, lk = rng.randint(0, 40), rng.randint(0, 40)
        causal = rng.random() < 0.5
        window = (rng.choice([-1, 0, 3, 17]), rng.choice([-1, 0, 5]))
        want = int(visible_mask(lq, lk, causal=causal, window=window).sum()) if lq and lk else 0
        assert flops.attention_pairs([lq], [lk], causal=causal, window=window) == want
    assert flops.attention_pairs([5], [5], causal=True, window=(-1, -1)) == 15


def test_hstu_pairs_match_bruteforce_and_reference_mask():
    from jagattn.hstu.reference import hstu_mask

    rng = random.Random(5)
    for _ in range(60):
        n = rng.randint(0, 48)
        t = rng.choice([None, 0, rng.randint(0, n)])
        c = rng.choice([0, 0, 1, 3, 6])
        w = rng.choice([0, 0, 1, 4, 9])
        f = rng.choice([0, 0, 2, 5]) if w else 0
        fast = flops.hstu_pairs_one(n, t, contextual=c, window=w, min_full=f)
        brute = int(flops.hstu_mask_bruteforce(n, t, contextual=c, window=w, min_full=f).sum())
        assert fast == brute, (n, t, c, w, f)
        if n:
            ref = hstu_mask(n, num_targets=t, contextual_seq_len=c, max_attn_len=w, min_full_attn_seq_len=f)
            assert int(ref.sum()) == brute, (n, t, c, w, f)
    # causal history plus targets that see all history and themselves
    assert flops.hstu_pairs_one(10, 3) == 7 * 8 // 2 + 3 * 8
    assert flops.hstu_pairs([10, 4], [3, 1])["peer"] == 50 + 8


def test_check_subset_selection():
    assert harness.choose_check_subset([5, 6, 7], 100, 0) == ([0, 1, 2], None)
    ids, trunc = harness.choose_check_subset([4000, 9000, 100, 3000, 5000], 8192, 0)
    assert trunc is None and 1 not in ids and 4 in ids and 2 in ids  # longest that fits, shortest
    assert sum([4000, 9000, 100, 3000, 5000][i] for i in ids) <= 8192
    assert harness.choose_check_subset([32768], 4096, 0) == ([0], 4096)


def test_gate_compare_flags_nan_and_scale():
    g = torch.randn(64, 2, 8, generator=torch.Generator().manual_seed(0))
    assert harness.compare(g, g)["max_abs"] == 0
    e = harness.compare(g * 1.05, g)
    assert 0.04 < e["rms_rel"] < 0.06
    bad = g.clone()
    bad[3, 1, 2] = float("nan")
    assert harness.compare(bad, g)["nonfinite"] == 1


def test_backends_resolution():
    its, _ = impls.resolve("attention", "attention:reference,peers,hstu:gr_triton")
    names = [i.name for i in its]
    assert (
        names[0] == "reference" and "flex" in names and "torch_varlen" in names and "gr_triton" not in names
    )
    its, _ = impls.resolve("hstu", "attention:reference,peers,hstu:gr_triton")
    assert [i.name for i in its] == ["gr_triton"]
    # a peer name of another family is skipped, a jagattn-wide name a family lacks is an n/a row
    its, _ = impls.resolve("gated_delta", "flex,reference")
    assert [i.name for i in its] == ["reference"]
    with pytest.raises(ValueError, match="unknown family"):
        impls.resolve("attention", "nofam:reference")


# -- a crashing implementation (e.g. a peer kernel with an illegal memory access) ---------------


def test_lost_cuda_context_stops_the_run_and_says_why(tmp_path, monkeypatch, capsys):
    """Without --isolate, an error that breaks the CUDA context ends the run (every later CUDA call
    would fail), keeps what was measured, and names the implementation, row and stage (exit 3)."""
    monkeypatch.setenv(harness.FAULT_ENV, "hstu/smoke-targets:reference")
    rc, doc = _run(tmp_path, "--family", "attention,hstu", "--backends", "reference", "--no-progress")
    assert rc == 3
    assert doc["device_lost"]["row"] == "hstu/smoke-targets"
    assert doc["device_lost"]["impl"] == "reference" and doc["device_lost"]["stage"] == "check"
    assert [r["family"] for r in doc["rows"]] == ["attention", "attention"]  # measured before it
    assert "hstu/smoke-targets" in doc["skipped_rows"]
    assert "broke the CUDA context on hstu/smoke-targets" in capsys.readouterr().out


@pytest.mark.parametrize("how", ["raise", "abort"])
def test_isolate_reruns_without_the_crashing_implementation(tmp_path, how, monkeypatch, capsys):
    """--isolate: the family runs in a child process; when one implementation kills it (abort) or
    breaks its CUDA context (raise), that column says so and the rows rerun without it.

    The parent is this process (``cli.main``, what ``python -m jagattn bench`` calls; it runs no row itself):
    one interpreter start and torch import fewer per case (CI time). Its children are real
    ``python -m jagattn bench`` processes, with the fault and the interpreter in their environment."""
    import os
    import subprocess
    import types

    fault = "attention/smoke-causal-gqa:triton" + (":abort" if how == "abort" else "")
    out = tmp_path / "bench.json"
    monkeypatch.setenv(harness.FAULT_ENV, fault)
    children = []

    def call(argv, env=None, **kwargs):
        children.append(argv)
        env = {**(os.environ if env is None else env), "TRITON_INTERPRET": "1"}
        return subprocess.call(argv, env=env, timeout=600, **kwargs)

    monkeypatch.setattr(cli, "subprocess", types.SimpleNamespace(call=call))
    cmd = ["--suite", "smoke", "--family", "attention", "--isolate"]
    cmd += ["--backends", "triton,reference", "--dtype", "fp16", "--cpu-reps", "1", "--no-progress"]
    rc = cli.main([*cmd, "--json", str(out)])
    assert rc == 1, capsys.readouterr().err[-2000:]  # the crashed column counts as a failure
    assert len(children) == 2 and all(a[1:4] == ["-m", "jagattn", "bench"] for a in children), children
    doc = json.loads(out.read_text())
    (crash,) = doc["isolated"]["crashes"]
    assert (crash["row"], crash["impl"], crash["stage"]) == ("attention/smoke-causal-gqa", "triton", "check")
    assert ("SIGABRT" in crash["error"]) if how == "abort" else ("illegal memory access" in crash["error"])
    first, second = doc["rows"]
    assert first["row"] == "smoke-causal-gqa" and second["row"] == "smoke-window"
    assert first["impls"]["triton"]["status"] == "error"
    assert first["impls"]["triton"]["reason"].startswith("crashed during check")
    assert second["impls"]["triton"]["reason"].startswith("not run: it crashed")
    for r in (first, second):  # the others were measured and checked in the rerun
        assert r["impls"]["reference"]["status"] == "ok" and r["impls"]["reference"]["gate"] == "pass"
        assert list(r["impls"]) == ["triton", "reference"]


def test_provenance_records_every_jagattn_variable(monkeypatch):
    """A result is only reproducible with its knobs: every JAGATTN_* variable that is set (and the
    interpreter switch) lands in the provenance, nothing else from the environment."""
    from jagattn.bench import report

    monkeypatch.setenv("JAGATTN_AUTOTUNE", "0")
    monkeypatch.setenv("JAGATTN_GD_FP16_DOT", "ieee")
    monkeypatch.setenv("JAGATTN_NOT_A_KNOB_YET", "x")
    monkeypatch.setenv("SOME_OTHER_VAR", "y")
    env = report.provenance(["bench"], torch.device("cpu"), {})["env"]
    assert env["JAGATTN_AUTOTUNE"] == "0" and env["JAGATTN_GD_FP16_DOT"] == "ieee"
    assert env["JAGATTN_NOT_A_KNOB_YET"] == "x" and "SOME_OTHER_VAR" not in env
