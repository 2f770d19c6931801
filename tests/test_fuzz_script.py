"""``benchmarks/fuzz_spec_rule.py`` (the random SPEC-rule fuzz of every op's Triton backend) keeps working:
one fixed seed per op passes, and a reproducer line names the op and seed when a case fails."""

from __future__ import annotations

import pytest

# seeds with several sequences, gradients and the op's options (seen in the case descriptions)
SEEDS = {"attention": 7, "hstu": 3, "gated_delta": 0, "gated_delta_gk": 2}


@pytest.mark.parametrize("op", list(SEEDS))
def test_fuzz_case_passes(fuzz, op, device):
    assert fuzz.run_case(op, SEEDS[op], device, 1) is None


def test_fuzz_reports_a_failure(fuzz, monkeypatch, device):
    # a backend that is off by a lot must be reported, with the dtype and the case description
    import jagattn

    real = jagattn.hstu_attention
    monkeypatch.setattr(jagattn, "hstu_attention", lambda *a, **k: real(*a, **k) * 1.5)
    msg = fuzz.run_case("hstu", SEEDS["hstu"], device, 1)
    assert msg is not None and "lengths=" in msg and "o: backend error" in msg


def test_fuzz_reproducer_names_the_scale(fuzz, monkeypatch, capsys, device):
    # the reproducer must rebuild the same case: the lengths scale with --scale (session 14 re-ran GPU
    # failures without it and got other cases)
    import sys

    import jagattn

    real = jagattn.hstu_attention
    monkeypatch.setattr(jagattn, "hstu_attention", lambda *a, **k: real(*a, **k) * 1.5)
    seed = SEEDS["hstu"]
    monkeypatch.setattr(
        sys, "argv", ["fuzz", "--op", "hstu", "--seed", str(seed), "--scale", "2", "--device", device]
    )
    with pytest.raises(SystemExit) as exit_info:
        fuzz.main()
    assert exit_info.value.code == 1  # a failing case makes the run fail
    out = capsys.readouterr().out
    dev = f" --device {device}" if device != "cpu" else ""
    assert f"FAIL --op hstu --seed {seed} --scale 2{dev}: " in out
