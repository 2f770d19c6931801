"""Backend selection (SPEC.md section 4) on a fake family plus the real ones."""

import logging
import threading

import pytest
import torch

import jagattn
from jagattn import testing
from jagattn._core import dispatch
from jagattn._core.dispatch import Backend, NotSupportedError


class Fake(Backend):
    family = "_fake"

    def __init__(self, name, *, unavailable=None, rejects=None, raises_in_reasons=False):
        super().__init__()
        self.name = name
        self._why = unavailable
        self.rejects = rejects or (lambda x: [])
        self.raises_in_reasons = raises_in_reasons
        self.calls = 0

    def _unavailable_reason(self):
        return self._why

    def not_supported_reasons(self, inputs):
        if self.raises_in_reasons:
            raise KeyError("oops")
        return self.rejects(inputs)

    def __call__(self, inputs):
        self.calls += 1
        return self.name


@pytest.fixture
def fake_family():
    fast = Fake("fast", rejects=lambda x: ["x too big"] if x > 10 else [])
    broken = Fake("broken", unavailable="library missing")
    buggy = Fake("buggy", raises_in_reasons=True)
    slow = Fake("slow")
    dispatch.register_family("_fake", (fast, broken, buggy, slow))
    yield {b.name: b for b in (fast, broken, buggy, slow)}
    dispatch._REGISTRY.pop("_fake", None)


def test_auto_takes_first_backend_without_reasons(fake_family):
    assert dispatch.select("_fake", 1).name == "fast"
    assert dispatch.select("_fake", 11).name == "slow"


def test_explicit_backend_never_falls_back(fake_family):
    with pytest.raises(NotSupportedError, match="(?s)'fast' .* x too big") as info:
        dispatch.select("_fake", 11, "fast")
    assert "no fallback" in str(info.value)
    with pytest.raises(NotSupportedError, match="unavailable: library missing"):
        dispatch.select("_fake", 1, "broken")
    assert dispatch.select("_fake", 11, "slow").name == "slow"


def test_error_lists_every_backend_with_reasons(fake_family):
    fake_family["slow"].rejects = lambda x: ["slow says no"]
    with pytest.raises(NotSupportedError) as info:
        dispatch.select("_fake", 11)
    msg = str(info.value)
    for line in (
        "fast: x too big",
        "broken: unavailable: library missing",
        "buggy: not_supported_reasons raised KeyError",
        "slow: slow says no",
    ):
        assert line in msg


def test_unknown_backend_name(fake_family):
    with pytest.raises(ValueError, match="has no backend 'nope'"):
        dispatch.select("_fake", 1, "nope")


def test_availability_is_cached_and_never_raises():
    class Boom(Backend):
        name, family = "boom", "_x"
        n = 0

        def _unavailable_reason(self):
            Boom.n += 1
            raise RuntimeError("driver exploded")

    b = Boom()
    assert b.available() is False and b.available() is False
    assert "driver exploded" in b.unavailable_reason()
    assert Boom.n == 1


def test_use_backend_context_manager(fake_family):
    with jagattn.use_backend("slow"):
        assert dispatch.select("_fake", 1).name == "slow"
        # explicit names still win over the default
        assert dispatch.select("_fake", 1, "fast").name == "fast"
    assert dispatch.select("_fake", 1).name == "fast"
    with jagattn.use_backend(_fake="slow"):
        assert dispatch.select("_fake", 1).name == "slow"
    with pytest.raises(ValueError, match="no family has a backend named 'zzz'"):
        with jagattn.use_backend("zzz"):
            pass
    with pytest.raises(ValueError, match="unknown family 'nofam'"), jagattn.use_backend(nofam="x"):
        pass
    with pytest.raises(ValueError, match="family '_fake' has no backend 'reference'"):
        with jagattn.use_backend(_fake="reference"):
            pass


def test_use_backend_nested_blocks_keep_the_outer_setting(fake_family):
    # an inner block changes what it names, the rest of the outer block's setting stays (before session 46 an inner
    # use_backend(hstu=...) silently dropped an outer attention=...)
    second = Fake("fast")
    dispatch.register_family("_fake2", (Fake("slow"), second))
    try:
        with jagattn.use_backend(_fake="slow"):
            with jagattn.use_backend(_fake2="fast"):
                assert dispatch.select("_fake", 1).name == "slow"
                assert dispatch.select("_fake2", 1) is second
            with jagattn.use_backend("fast"):  # a name for every family replaces the outer per-family one
                assert dispatch.select("_fake", 1).name == "fast"
                assert dispatch.select("_fake2", 1) is second
            with jagattn.use_backend("auto"):
                assert dispatch.select("_fake", 11).name == "slow"  # auto: the first without reasons
            assert dispatch.select("_fake", 1).name == "slow"
        with jagattn.use_backend("slow"), jagattn.use_backend(_fake2="fast"):
            assert dispatch.select("_fake", 1).name == "slow"
            assert dispatch.select("_fake2", 1) is second
    finally:
        dispatch._REGISTRY.pop("_fake2", None)
        dispatch._BY_NAME.pop("_fake2", None)


def test_explicit_backend_whose_reasons_raise_is_not_supported(fake_family):
    # the explicit path reports a reasons() bug like auto does: NotSupportedError naming it, not a raw KeyError
    with pytest.raises(NotSupportedError, match="not_supported_reasons raised KeyError"):
        dispatch.select("_fake", 1, "buggy")


def test_meta_tensors_no_backend_reads_values():
    # meta tensors carry no values: the reference backends (which loop over cu_seqlens' values) reject them
    # with a reason instead of failing inside (NotImplementedError: Cannot copy out of meta tensor)
    q = torch.empty(10, 2, 16, device="meta", dtype=torch.float16)
    cu = torch.tensor([0, 4, 10], dtype=torch.int32, device="meta")
    with pytest.raises(NotSupportedError, match="(?s)reference: meta tensors hold no values"):
        jagattn.attention(q, q, q, cu, max_seqlen_q=6)
    ex = jagattn.explain("attention", q, q, q, cu, max_seqlen_q=6)
    assert ex.chosen is None and any("meta tensors" in "".join(r.reasons) for r in ex.rows)


def test_use_backend_default_is_not_a_silent_fallback(fake_family):
    with jagattn.use_backend("fast"), pytest.raises(NotSupportedError, match="jagattn.use_backend"):
        dispatch.select("_fake", 11)


def test_use_backend_is_per_thread(fake_family):
    seen = {}

    def worker():
        seen["other"] = dispatch.select("_fake", 1).name

    with jagattn.use_backend("slow"):
        t = threading.Thread(target=worker)
        t.start()
        t.join()
        seen["here"] = dispatch.select("_fake", 1).name
    assert seen == {"other": "fast", "here": "slow"}


def test_env_var(fake_family, monkeypatch):
    monkeypatch.setenv("JAGATTN_BACKEND", "slow")
    assert dispatch.select("_fake", 1).name == "slow"
    monkeypatch.setenv("JAGATTN_BACKEND", "_fake=slow,attention=reference")
    assert dispatch.select("_fake", 1).name == "slow"
    # A name a family lacks does not apply to that family.
    monkeypatch.setenv("JAGATTN_BACKEND", "reference")
    assert dispatch.select("_fake", 1).name == "fast"
    # The context manager wins over the environment.
    monkeypatch.setenv("JAGATTN_BACKEND", "slow")
    with jagattn.use_backend(_fake="fast"):
        assert dispatch.select("_fake", 1).name == "fast"
    monkeypatch.setenv("JAGATTN_BACKEND", "_fake=nope")
    with pytest.raises(ValueError, match="no backend 'nope' \\(from JAGATTN_BACKEND\\)"):
        dispatch.select("_fake", 1)
    # names that can never apply are refused, not ignored
    monkeypatch.setenv("JAGATTN_BACKEND", "tritn")
    with pytest.raises(ValueError, match="JAGATTN_BACKEND: no family has a backend named 'tritn'"):
        dispatch.select("_fake", 1)
    monkeypatch.setenv("JAGATTN_BACKEND", "atention=triton")
    with pytest.raises(ValueError, match="JAGATTN_BACKEND: unknown family 'atention'"):
        dispatch.select("_fake", 1)
    monkeypatch.setenv("JAGATTN_BACKEND", "auto")
    assert dispatch.select("_fake", 1).name == "fast"


def test_explain_table(fake_family):
    table = dispatch.explain_inputs("_fake", 11)
    assert table.chosen == "slow"
    text = str(table)
    assert "fast" in text and "x too big" in text and "CHOSEN" in text and "library missing" in text
    table = dispatch.explain_inputs("_fake", 1, "slow")
    assert table.chosen == "slow"
    assert [r.backend for r in table.rows] == ["fast", "broken", "buggy", "slow"]
    fake_family["slow"].rejects = lambda x: ["no"]
    table = dispatch.explain_inputs("_fake", 11)
    assert table.chosen is None and "nothing can run" in str(table)


def test_first_choice_logged_once(fake_family, caplog):
    dispatch._LOGGED.discard(("_fake", "fast"))
    with caplog.at_level(logging.INFO, logger="jagattn"):
        dispatch.select("_fake", 1)
        dispatch.select("_fake", 2)
    lines = [r.getMessage() for r in caplog.records if "_fake uses backend 'fast'" in r.getMessage()]
    assert len(lines) == 1


def test_public_explain_validates_like_the_call():
    gen = testing.generator(0)
    q = testing.randn((10, 2, 8), generator=gen)
    cu = testing.cu_seqlens([3, 7])
    table = jagattn.explain("attention", q, q, q, cu, causal=True)
    assert table.chosen is not None
    assert "reference" in [r.backend for r in table.rows]
    with pytest.raises(ValueError, match="cu_seqlens_q: last value"):
        jagattn.explain("attention", q, q, q, testing.cu_seqlens([3, 6]))
    with pytest.raises(ValueError, match="family: unknown family"):
        jagattn.explain("softmax", q)


def test_backend_table_lists_every_family():
    rows = jagattn.backend_table()
    fams = {r["family"] for r in rows}
    assert "attention" in fams
    assert all({"family", "backend", "available", "reason"} <= set(r) for r in rows)
    ref = [r for r in rows if r["backend"] == "reference"]
    assert ref and all(r["available"] for r in ref)


def test_reference_explicit_on_every_family_runs():
    gen = testing.generator(1)
    q = testing.randn((6, 2, 8), generator=gen)
    o = jagattn.attention(q, q, q, testing.cu_seqlens([6]), backend="reference")
    assert o.shape == (6, 2, 8) and torch.isfinite(o).all()
