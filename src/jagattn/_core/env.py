"""Opt-in environment switches, read with validation: a value that is set but not understood raises a
``ValueError`` naming the variable, the allowed values and the value, instead of being ignored.

Values are stripped of surrounding whitespace; an unset or empty variable gives the default. Choices
match case-insensitively and come back as spelled in ``choices``. Flags take ``0`` or ``1`` only:
before validation every value other than ``0`` turned some of them on and others off, so a word
such as ``false`` or ``off`` is refused rather than given a meaning it never had.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TypeVar

_D = TypeVar("_D")


def env_choice(name: str, choices: Sequence[str], default: _D) -> str | _D:
    """The value of ``name`` as one of ``choices``; ``default`` when unset or empty."""
    value = os.environ.get(name, "").strip()
    if not value:
        return default
    by_key = {c.lower(): c for c in choices if c}
    if value.lower() not in by_key:
        raise ValueError(f"{name} must be one of {', '.join(by_key.values())} (got {value!r})")
    return by_key[value.lower()]


def env_flag(name: str, default: _D) -> bool | _D:
    """``True`` for ``1``, ``False`` for ``0``; ``default`` when unset or empty."""
    value = env_choice(name, ("0", "1"), None)
    return default if value is None else value == "1"


def env_positive_int(name: str, default: _D) -> int | _D:
    """The value of ``name`` as an integer >= 1; ``default`` when unset or empty."""
    value = os.environ.get(name, "").strip()
    if not value:
        return default
    if not (value.isascii() and value.isdigit() and int(value) > 0):
        raise ValueError(f"{name} must be a positive integer (got {value!r})")
    return int(value)
