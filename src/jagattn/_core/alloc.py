"""Output allocation for kernel launchers.

With ``JAGATTN_POISON=1`` (set by the test suite) outputs are filled with NaN instead of left
uninitialised, so a kernel that forgets to write an element is caught by the comparison.
"""

from __future__ import annotations

import torch

from .env import env_flag
from .launch import _TLS


def poison_enabled() -> bool:
    return env_flag("JAGATTN_POISON", False)


def new_empty(shape, *, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """An uninitialised (poisoned: NaN-filled) tensor; inside a launch-replay recording (``replay.Replay.call``) it
    also becomes one of the op's tensors, which a replay allocates again the same way."""
    if poison_enabled() and (dtype.is_floating_point):
        t = torch.full(shape, float("nan"), dtype=dtype, device=device)
    else:
        t = torch.empty(shape, dtype=dtype, device=device)
    rec = getattr(_TLS, "rec", None)
    if rec is not None:
        rec.adopt(t, shape, dtype, device)
    return t
