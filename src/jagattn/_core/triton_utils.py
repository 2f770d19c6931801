"""Triton helpers shared by the kernels: availability, interpreter detection, autotune configs.

``TRITON_INTERPRET=1`` must be set before triton is imported; the CPU test suite does so in
``tests/conftest.py``. Under the interpreter every autotuned kernel gets exactly one config
(the interpreter is slow and timing it means nothing).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from .env import env_flag, env_raw


def interpreter_enabled() -> bool:
    # env_raw: read on every call (several per launch on a GPU), cheaply when unset (_core/env.py)
    return env_raw("TRITON_INTERPRET") not in ("", "0")


@functools.cache
def triton_import_error() -> str | None:
    """None when triton imports, else a one-line reason."""
    try:
        import triton  # noqa: F401
        import triton.language  # noqa: F401
    except Exception as exc:  # ImportError and broken installs alike
        return f"triton does not import ({type(exc).__name__}: {exc})"
    return None


def triton_version() -> str | None:
    if triton_import_error() is not None:
        return None
    import triton

    return triton.__version__


_CUDA_SEEN = False  # torch.cuda.is_available() was True once: it stays so (the device count is fixed at init)


def device_reasons(device_type: str) -> list[str]:
    """Why a Triton kernel cannot run on tensors of this device type (empty list = it can)."""
    if device_type == "cuda":
        global _CUDA_SEEN
        if not _CUDA_SEEN:  # (is_available reads an env var and the device count: ~2 us on every call)
            import torch

            if not torch.cuda.is_available():
                return ["CUDA tensors but torch.cuda is not available"]
            _CUDA_SEEN = True
        return []
    if device_type == "cpu":
        if interpreter_enabled():
            return []
        return ["CPU tensors need the Triton interpreter (set TRITON_INTERPRET=1 before importing triton)"]
    return [f"device type {device_type!r} is not supported by the Triton kernels"]


def backend_unavailable_reason() -> str | None:
    """Shared ``_unavailable_reason`` of the Triton backends."""
    err = triton_import_error()
    if err is not None:
        return err
    import torch

    if not torch.cuda.is_available() and not interpreter_enabled():
        return "no CUDA device and TRITON_INTERPRET is not set"
    return None


def autotune_enabled(family: str, default: bool = True) -> bool:
    """Whether a family's kernels autotune. ``JAGATTN_<FAMILY>_AUTOTUNE`` wins over
    ``JAGATTN_AUTOTUNE``; ``0`` pins every kernel to its first config (GPU test runs use it to
    spend device time on checks rather than tuning). Callers read it once at import so that no
    environment read happens while torch.compile traces a launcher."""
    # both are read (and validated) even when the family's variable decides
    flags = [env_flag(var, None) for var in (f"JAGATTN_{family.upper()}_AUTOTUNE", "JAGATTN_AUTOTUNE")]
    return next((flag for flag in flags if flag is not None), default)


def configs(gpu: Sequence[Any], interpreter: Any) -> list[Any]:
    """Autotune configs: ``gpu`` on a device, the single ``interpreter`` config under the interpreter."""
    return [interpreter] if interpreter_enabled() else list(gpu)


def next_power_of_2(n: int) -> int:
    return 1 if n <= 1 else 1 << (int(n) - 1).bit_length()
