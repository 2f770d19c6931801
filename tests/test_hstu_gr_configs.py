"""The bench adapter's restriction of generative-recommenders' autotune lists (no GR code needed:
fake autotuners with real ``triton.Config`` objects stand in for GR's module)."""

from __future__ import annotations

import types

import pytest
import triton

from jagattn.bench.peers import gr_config_name, parse_gr_rules, restrict_gr_configs


def _tuner(cfgs):
    return types.SimpleNamespace(configs=list(cfgs), cache={"key": "old choice"})


def _bwd(m, n, w, s, sp=False, u=1):
    return triton.Config(
        {"BLOCK_M": m, "BLOCK_N": n, "SEQUENCE_PARALLEL": sp, "UNROLL": u}, num_warps=w, num_stages=s
    )


def _fwd(m, n, w, s):
    return triton.Config({"BLOCK_M": m, "BLOCK_N": n, "USE_TLX": False}, num_warps=w, num_stages=s)


def _module():
    fwd = [_fwd(16, 32, 2, 2), _fwd(64, 64, 4, 2), _fwd(128, 64, 8, 2)]
    bwd = [_bwd(16, 32, 2, 2), _bwd(16, 32, 8, 1), _bwd(32, 64, 8, 2), _bwd(64, 64, 4, 2, sp=True)]
    return types.SimpleNamespace(_hstu_attn_fwd=_tuner(fwd), _hstu_attn_bwd=_tuner(bwd))


def test_rules_drop_only_matching_configs_and_reset_the_cache():
    mod = _module()
    removed = restrict_gr_configs(mod, "bwd:m=16/w=8, bwd:sp=1")
    assert removed == {"fwd": [], "bwd": ["bwd:m=16/n=32/sp=0/u=1/w=8/s=1", "bwd:m=64/n=64/sp=1/u=1/w=4/s=2"]}
    assert [gr_config_name("bwd", c) for c in mod._hstu_attn_bwd.configs] == [
        "bwd:m=16/n=32/sp=0/u=1/w=2/s=2",
        "bwd:m=32/n=64/sp=0/u=1/w=8/s=2",
    ]
    assert mod._hstu_attn_bwd.cache == {}
    assert len(mod._hstu_attn_fwd.configs) == 3 and mod._hstu_attn_fwd.cache == {"key": "old choice"}


def test_restriction_is_idempotent_and_reversible():
    mod = _module()
    restrict_gr_configs(mod, "fwd:m=16")
    restrict_gr_configs(mod, "fwd:m=16")
    assert [c.kwargs["BLOCK_M"] for c in mod._hstu_attn_fwd.configs] == [64, 128]
    assert restrict_gr_configs(mod, "") == {"fwd": [], "bwd": []}
    assert len(mod._hstu_attn_fwd.configs) == 3 and len(mod._hstu_attn_bwd.configs) == 4


@pytest.mark.parametrize("spec", ["bwd", "xyz:m=16", "bwd:q=1", "bwd:m=x", "fwd:m=16/w"])
def test_bad_rules_raise_naming_the_rule(spec):
    with pytest.raises(ValueError, match="JAGATTN_GR_EXCLUDE"):
        parse_gr_rules(spec)


def test_excluding_a_whole_list_is_refused():
    with pytest.raises(ValueError, match="every GR fwd config"):
        restrict_gr_configs(_module(), "fwd:w=2,fwd:w=4,fwd:w=8")
