"""Opt-in environment switches, read with validation: a value that is set but not understood raises a
``ValueError`` naming the variable, the allowed values and the value, instead of being ignored.

Values are stripped of surrounding whitespace; an unset or empty variable gives the default. Choices
match case-insensitively and come back as spelled in ``choices``. Flags take ``0`` or ``1`` only:
before validation every value other than ``0`` turned some of them on and others off, so a word
such as ``false`` or ``off`` is refused rather than given a meaning it never had.

Per-call switches are read on every call (tests and users change the environment between calls), but
only the raw read is repeated (:func:`env_raw`): the parsed value is remembered under the raw string, so
a changed value is parsed afresh and a refused one raises on every read (errors are never cached).
Session 31, CPU host: ``os.environ.get`` of an unset variable took ~1.3-2 us (``_Environ`` has no ``get``:
``Mapping.get`` raises and catches a ``KeyError``), parsing a set one ~1 us more; ~14 such reads per HSTU
forward + backward. ``env_raw`` of an unset variable takes ~0.25 us.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any, TypeVar

_D = TypeVar("_D")

_ENVIRON = os.environ
# os.environ's own store (CPython's ``_Environ``: encoded keys -> encoded values, kept in sync by every
# write through os.environ, monkeypatch.setenv included); None where it looks different: plain reads then
_DATA = getattr(_ENVIRON, "_data", None)
if not (
    isinstance(_DATA, dict)
    and callable(getattr(_ENVIRON, "encodekey", None))
    and callable(getattr(_ENVIRON, "decodevalue", None))
):  # pragma: no cover - another Python implementation
    _DATA = None
_KEYS: dict[str, Any] = {}  # name -> its encoded key in _DATA


def env_raw(name: str) -> str:
    """``os.environ.get(name, "")``, without the raised and caught ``KeyError`` of an unset variable."""
    if _DATA is None or os.environ is not _ENVIRON:  # os.environ rebound: read whatever it is now
        return os.environ.get(name, "")
    key = _KEYS.get(name)
    if key is None:
        key = _KEYS[name] = _ENVIRON.encodekey(name)
    value = _DATA.get(key)
    return "" if value is None else _ENVIRON.decodevalue(value)


def env_snapshot() -> tuple | None:
    """The raw values of every variable ``env_raw`` has read so far in this process, in a fixed order (a part of
    ``replay.Replay``'s key: a launcher's switches change only with one of them); None where ``os.environ`` is not
    CPython's own mapping."""
    if _DATA is None or os.environ is not _ENVIRON:
        return None
    data, keys = _DATA, tuple(_KEYS.values())  # (tuple(): one step, safe against other threads adding names)
    return tuple([data.get(k) for k in keys])


_MISS = object()  # not parsed yet
_UNSET = object()  # parsed: empty after stripping, so the caller's default applies
_CHOICES: dict[tuple[str, str, tuple[str, ...]], Any] = {}  # (name, raw value, choices) -> choice / _UNSET
_INTS: dict[tuple[str, str], Any] = {}  # (name, raw value) -> int / _UNSET
_CACHE_MAX = 1024  # distinct raw values are few; a process that keeps inventing new ones just re-parses


def _remember(cache: dict, key: tuple, value: Any) -> Any:
    if len(cache) >= _CACHE_MAX:
        cache.clear()
    cache[key] = value
    return value


def _parse_choice(name: str, raw: str, choices: Sequence[str]) -> Any:
    value = raw.strip()
    if not value:
        return _UNSET
    by_key = {c.lower(): c for c in choices if c}
    if value.lower() not in by_key:
        raise ValueError(f"{name} must be one of {', '.join(by_key.values())} (got {value!r})")
    return by_key[value.lower()]


def env_choice(name: str, choices: Sequence[str], default: _D) -> str | _D:
    """The value of ``name`` as one of ``choices``; ``default`` when unset or empty."""
    raw = env_raw(name)
    if not raw:
        return default
    key = (name, raw, tuple(choices))  # the callers pass tuples: no copy
    value = _CHOICES.get(key, _MISS)
    if value is _MISS:
        value = _remember(_CHOICES, key, _parse_choice(name, raw, key[2]))
    return default if value is _UNSET else value


def env_flag(name: str, default: _D) -> bool | _D:
    """``True`` for ``1``, ``False`` for ``0``; ``default`` when unset or empty."""
    value = env_choice(name, ("0", "1"), None)
    return default if value is None else value == "1"


def _parse_positive_int(name: str, raw: str) -> Any:
    value = raw.strip()
    if not value:
        return _UNSET
    if not (value.isascii() and value.isdigit() and int(value) > 0):
        raise ValueError(f"{name} must be a positive integer (got {value!r})")
    return int(value)


def env_positive_int(name: str, default: _D) -> int | _D:
    """The value of ``name`` as an integer >= 1; ``default`` when unset or empty."""
    raw = env_raw(name)
    if not raw:
        return default
    key = (name, raw)
    value = _INTS.get(key, _MISS)
    if value is _MISS:
        value = _remember(_INTS, key, _parse_positive_int(name, raw))
    return default if value is _UNSET else value
