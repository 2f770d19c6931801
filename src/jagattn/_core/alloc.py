"""Output allocation for kernel launchers.

With ``JAGATTN_POISON=1`` (set by the test suite) outputs are filled with NaN instead of left
uninitialised, so a kernel that forgets to write an element is caught by the comparison.
"""

from __future__ import annotations

import torch

from .env import env_flag


def poison_enabled() -> bool:
    return env_flag("JAGATTN_POISON", False)


def new_empty(shape, *, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    if poison_enabled() and (dtype.is_floating_point):
        return torch.full(shape, float("nan"), dtype=dtype, device=device)
    return torch.empty(shape, dtype=dtype, device=device)
