"""Packed-layout helpers of _core.varlen."""

import pytest
import torch

from jagattn import testing
from jagattn._core import varlen


def test_cu_seqlens_from_lengths_and_back():
    lens = [0, 3, 1, 0, 7]
    cu = varlen.cu_seqlens_from_lengths(lens)
    assert cu.tolist() == [0, 0, 3, 4, 4, 11] and cu.dtype == torch.int32
    assert varlen.seq_lengths(cu) == lens
    with pytest.raises(ValueError, match="negative length"):
        varlen.cu_seqlens_from_lengths([1, -1])


def test_resolve_max_seqlen_computes_once_and_validates():
    cu = varlen.cu_seqlens_from_lengths([2, 9, 4])
    assert varlen.resolve_max_seqlen(cu, None, "m", "cu") == 9
    assert varlen.resolve_max_seqlen(cu, 12, "m", "cu") == 12
    assert varlen.resolve_max_seqlen(torch.zeros(1, dtype=torch.int32), None, "m", "cu") == 0
    with pytest.raises(TypeError, match="m: expected an int"):
        varlen.resolve_max_seqlen(cu, 3.0, "m", "cu")


def test_value_checks_skip_gpu_tensors_unless_enabled(monkeypatch):
    cu = torch.tensor([0, 5, 3])
    with pytest.raises(ValueError, match="non-decreasing"):
        varlen.check_cu_values(cu, "cu", total=3)
    assert varlen.value_checks_enabled(cu)
    meta = cu.to("meta")
    assert not varlen.value_checks_enabled(meta)
    assert varlen.check_cu_values(meta, "cu", total=3) is None  # not checked: no lengths either


def test_value_checks_return_the_lengths():
    # (the families' own value checks reuse them)
    lens = varlen.check_cu_values(torch.tensor([0, 2, 2, 7], dtype=torch.int32), "cu", total=7, max_seqlen=5)
    assert lens.dtype == torch.int64 and lens.tolist() == [2, 0, 5]
    assert varlen.check_cu_values(torch.zeros(1, dtype=torch.int32), "cu", total=0).tolist() == []


@pytest.mark.parametrize("kind", testing.LENGTH_KINDS)
def test_random_lengths_kinds(kind):
    lens = testing.random_lengths(kind, batch=8, max_len=100, seed=1)
    assert all(0 <= n <= 100 for n in lens) and lens
    assert lens == testing.random_lengths(kind, batch=8, max_len=100, seed=1)
    if kind == "empties":
        assert lens[0] == 0 and lens[-1] == 0
    if kind == "odd":
        assert lens[:3] == [1, 63, 65]
    with pytest.raises(ValueError, match="kind: unknown"):
        testing.random_lengths("weird")


def test_poisoned_outputs_fill_kernel_outputs_with_nan():
    from jagattn._core.alloc import new_empty

    with testing.poisoned_outputs(True):
        assert torch.isnan(new_empty((3, 2), dtype=torch.float16, device="cpu")).all()
        assert new_empty((2,), dtype=torch.int32, device="cpu").dtype == torch.int32
    with testing.poisoned_outputs(False):
        assert new_empty((3,), dtype=torch.float32, device="cpu").shape == (3,)
