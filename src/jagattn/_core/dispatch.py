"""Backend selection shared by every family (SPEC.md section 4).

A *family* (``attention``, ``hstu``, ``gated_delta``) owns an ordered tuple of backends. Each
backend answers ``available()`` (cheap, cached, never raises) and
``not_supported_reasons(inputs)`` from metadata only: shapes, dtypes, devices and flags, never
tensor values and never a device sync. ``select`` turns the user's ``backend=`` argument into one
backend or raises :class:`NotSupportedError` listing every backend it considered and why it was
rejected. There is no silent fallback: an explicitly named backend runs or raises.

The default for ``backend="auto"`` can be overridden by the ``JAGATTN_BACKEND`` environment
variable (``name`` for every family that has it, or ``family=name,family=name``) and by the
:func:`use_backend` context manager, which takes precedence over the environment.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import logging
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import torch

from .env import env_raw

logger = logging.getLogger("jagattn")

AUTO = "auto"


class NotSupportedError(RuntimeError):
    """No backend (or not the requested one) can run these inputs. The message lists the reasons."""


class Backend:
    """Base class of a backend. Subclasses set ``name`` and ``family`` and override the hooks.

    ``_unavailable_reason`` returns ``None`` when the backend can run at all in this process
    (its imports work, a device exists, ...); it is called once and cached. Subclasses that need
    per-input checks override ``not_supported_reasons``.
    """

    name: str = ""
    family: str = ""
    description: str = ""

    def __init__(self) -> None:
        self._availability: tuple[bool, str | None] | None = None

    def _unavailable_reason(self) -> str | None:
        return None

    def availability(self) -> tuple[bool, str | None]:
        if self._availability is None:
            if torch.compiler.is_compiling():
                # first asked inside a graph being traced: a peer's import cannot be traced (dynamo: "Import
                # failure"), so the check runs outside the trace and its answer is a constant of the graph
                return _availability_traced(self.family, self.name)
            self._availability = self._check_availability()
        return self._availability

    def _check_availability(self) -> tuple[bool, str | None]:
        try:
            reason = self._unavailable_reason()
        except Exception as exc:  # available() must never raise
            reason = f"availability check failed: {type(exc).__name__}: {exc}"
        return (reason is None, reason)

    def available(self) -> bool:
        return self.availability()[0]

    def unavailable_reason(self) -> str | None:
        return self.availability()[1]

    def not_supported_reasons(self, inputs: Any) -> list[str]:
        return []

    def __call__(self, inputs: Any) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<{self.family} backend {self.name!r}>"


_REGISTRY: dict[str, tuple[Backend, ...]] = {}
# family -> {name: backend}: select's lookup, built at registration rather than on every call
_BY_NAME: dict[str, dict[str, Backend]] = {}


def register_family(family: str, backends: Sequence[Backend]) -> None:
    """Record the ordered backends of a family (first = most preferred)."""
    names = [b.name for b in backends]
    if len(set(names)) != len(names):
        raise ValueError(f"duplicate backend names in family {family!r}: {names}")
    _REGISTRY[family] = tuple(backends)
    _BY_NAME[family] = {b.name: b for b in backends}


def families() -> tuple[str, ...]:
    _ensure_families_loaded()
    return tuple(_REGISTRY)


def backends_of(family: str) -> tuple[Backend, ...]:
    _ensure_families_loaded()
    if family not in _REGISTRY:
        raise ValueError(f"family: unknown family {family!r}; known: {sorted(_REGISTRY)}")
    return _REGISTRY[family]


def _ensure_families_loaded() -> None:
    # Families register themselves on import; importing the package imports all of them.
    import jagattn  # noqa: F401


# ---------------------------------------------------------------------------------------------
# defaults: env var and context manager

_OVERRIDE: contextvars.ContextVar[Mapping[str, str] | None] = contextvars.ContextVar(
    "jagattn_backend_override", default=None
)


def _parse_env(value: str) -> dict[str, str]:
    """``JAGATTN_BACKEND``: ``name`` (every family) or ``family=name,family=name``."""
    out: dict[str, str] = {}
    for part in value.split(","):
        part = part.strip()
        if not part:
            continue
        if "=" in part:
            fam, _, name = part.partition("=")
            out[fam.strip()] = name.strip()
        else:
            out["*"] = part
    return out


def _checked_env(mapping: dict[str, str]) -> dict[str, str]:
    """``JAGATTN_BACKEND`` names that can never apply raise instead of being ignored: a family-wide
    name no family has, or a family that does not exist (a typo would otherwise silently leave
    ``auto`` in charge). A per-family name the family lacks raises where it is used."""
    for fam, name in mapping.items():
        if fam == "*":
            if name != AUTO and not any(name in {b.name for b in bs} for bs in _REGISTRY.values()):
                raise ValueError(f"JAGATTN_BACKEND: no family has a backend named {name!r}; {_all_names()}")
        elif fam not in _REGISTRY:
            raise ValueError(f"JAGATTN_BACKEND: unknown family {fam!r}; known: {sorted(_REGISTRY)}")
    return mapping


def _default_for(family: str) -> tuple[str, str] | None:
    """The overriding backend name for ``auto`` and where it came from, or None.

    Under ``torch.compile`` / strict ``torch.export`` the lookup runs once, when the graph is traced, and its
    result is a constant of that graph (dynamo cannot trace ``ContextVar.get``: before session 46 every ``auto``
    call broke ``fullgraph=True``). So a compiled function keeps the backend it was traced with until it is
    recompiled; ``use_backend`` / ``JAGATTN_BACKEND`` changes made later do not reach it.
    """
    if torch.compiler.is_compiling():
        return _default_for_traced(family)
    return _default_for_eager(family)


def _default_for_eager(family: str) -> tuple[str, str] | None:
    override = _OVERRIDE.get()
    sources: list[tuple[Mapping[str, str], str]] = []
    if override is not None:
        sources.append((override, "jagattn.use_backend"))
    env = env_raw("JAGATTN_BACKEND").strip()
    if env:
        sources.append((_checked_env(_parse_env(env)), "JAGATTN_BACKEND"))
    names = {b.name for b in _REGISTRY.get(family, ())}
    for mapping, source in sources:
        if family in mapping:
            return mapping[family], source
        # A family-wide default only applies to families that have a backend of that name
        # ("triton" for all; "flex" only means something for attention).
        if "*" in mapping and (mapping["*"] in names or mapping["*"] == AUTO):
            return mapping["*"], source
    return None


@torch._dynamo.assume_constant_result
def _availability_traced(family: str, name: str) -> tuple[bool, str | None]:
    b = _BY_NAME[family][name]
    if b._availability is None:
        b._availability = b._check_availability()
    return b._availability


@torch._dynamo.assume_constant_result
def _default_for_traced(family: str) -> tuple[str, str] | None:
    return _default_for_eager(family)


@contextlib.contextmanager
def use_backend(name: str | None = None, /, **per_family: str) -> Iterator[None]:
    """Set the backend ``backend="auto"`` resolves to, inside a ``with`` block.

    ``use_backend("reference")`` applies to every family that has a backend of that name;
    ``use_backend(attention="triton", hstu="reference")`` sets families one by one. The setting is
    per thread / per asyncio task (a ``contextvars`` variable) and wins over ``JAGATTN_BACKEND``. A nested block
    changes what it names and keeps the rest of the enclosing block's setting. Under ``torch.compile`` the
    setting is read when the graph is traced (see ``_default_for``).
    A named backend that cannot run the inputs raises :class:`NotSupportedError` (no fallback).

    Raises:
        ValueError: unknown family or a backend name no family has.
    """
    _ensure_families_loaded()
    # nested blocks: the inner one changes what it names and keeps the rest of the enclosing block's setting
    # (before session 46 an inner ``use_backend(hstu=...)`` silently dropped an outer ``attention=...``)
    mapping: dict[str, str] = dict(_OVERRIDE.get() or {})
    if name is not None:
        if not isinstance(name, str):
            raise TypeError(f"use_backend: name must be a str, got {type(name).__name__}")
        if name != AUTO and not any(name in {b.name for b in bs} for bs in _REGISTRY.values()):
            raise ValueError(f"use_backend: no family has a backend named {name!r}; {_all_names()}")
        mapping["*"] = name
        for fam in [f for f in mapping if f != "*"]:  # the name covers these families now
            if name == AUTO or name in {b.name for b in _REGISTRY[fam]}:
                del mapping[fam]
    for fam, bname in per_family.items():
        if fam not in _REGISTRY:
            raise ValueError(f"use_backend: unknown family {fam!r}; known: {sorted(_REGISTRY)}")
        if bname != AUTO and bname not in {b.name for b in _REGISTRY[fam]}:
            raise ValueError(
                f"use_backend: family {fam!r} has no backend {bname!r}; "
                f"it has {[b.name for b in _REGISTRY[fam]]}"
            )
        mapping[fam] = bname
    token = _OVERRIDE.set(mapping)
    try:
        yield
    finally:
        _OVERRIDE.reset(token)


class PureTorchBackend(Backend):
    """Base of the families' pure-PyTorch ``reference`` backends (the spec in code). Subclasses set ``family`` and
    ``description`` and implement ``run(inputs)``.

    - Meta tensors are rejected with a reason: the references loop over ``cu_seqlens``' values (before session
      46 a meta call failed inside with "Cannot copy out of meta tensor").
    - ``run`` goes without ``torch.autocast``: jagattn's ops compute in their inputs' dtype whatever autocast says
      (the Triton ops, registered custom ops, never see it). Before session 46 an fp32 training call under
      ``autocast(bfloat16)``, which ``auto`` sends to the reference, computed its products in bf16 and returned
      fp32 (attention o 1e-2 off instead of 2e-7), while the same call without gradients ran the Triton kernels in
      fp32.
    """

    name = "reference"

    def not_supported_reasons(self, inputs: Any) -> list[str]:
        if inputs.device_type == "meta":
            return [
                "meta tensors hold no values and the reference loops over cu_seqlens' values "
                "(trace shapes with FakeTensorMode or torch.compile instead)"
            ]
        return []

    def __call__(self, inputs: Any) -> Any:
        with torch.autocast(inputs.device_type, enabled=False):
            return self.run(inputs)

    def run(self, inputs: Any) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError


def _all_names() -> str:
    return "; ".join(f"{fam}: {[b.name for b in bs]}" for fam, bs in _REGISTRY.items())


# ---------------------------------------------------------------------------------------------
# selection


@dataclasses.dataclass(frozen=True)
class Verdict:
    backend: str
    chosen: bool
    reasons: tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class Explanation:
    """The table ``explain`` returns: every backend of a family, chosen or rejected with reasons."""

    family: str
    requested: str
    rows: tuple[Verdict, ...]
    note: str = ""

    @property
    def chosen(self) -> str | None:
        for row in self.rows:
            if row.chosen:
                return row.backend
        return None

    def __str__(self) -> str:
        width = max([len(r.backend) for r in self.rows] + [7])
        lines = [
            f"family {self.family!r}, backend={self.requested!r}" + (f" ({self.note})" if self.note else "")
        ]
        for r in self.rows:
            if r.chosen:
                status = "CHOSEN"
            elif r.reasons:
                status = "rejected"
            else:
                status = "usable"
            lines.append(f"  {r.backend:<{width}}  {status:<8}  {'; '.join(r.reasons)}".rstrip())
        return "\n".join(lines)

    __repr__ = __str__


def _verdicts(family: str, inputs: Any) -> list[tuple[Backend, list[str]]]:
    out = []
    for b in backends_of(family):
        ok, why = b.availability()
        if not ok:
            out.append((b, [f"unavailable: {why}"]))
            continue
        out.append((b, _reasons_of(b, inputs)))
    return out


def _reasons_of(b: Backend, inputs: Any) -> list[str]:
    try:
        return list(b.not_supported_reasons(inputs))
    except Exception as exc:  # a reasons() bug must not hide the other backends, nor escape raw
        return [f"not_supported_reasons raised {type(exc).__name__}: {exc}"]


_LOGGED: set[tuple[str, str]] = set()


def _resolve_request(family: str, backend: str) -> tuple[str, str]:
    if not isinstance(backend, str):
        raise TypeError(f"backend: expected a str such as 'auto', got {type(backend).__name__}")
    if backend != AUTO:
        return backend, "the backend= argument"
    default = _default_for(family)
    if default is not None and default[0] != AUTO:
        return default[0], default[1]
    return AUTO, "auto"


def select(family: str, inputs: Any, backend: str = AUTO) -> Backend:
    """Pick the backend that runs ``inputs``; raise :class:`NotSupportedError` with every reason."""
    requested, source = _resolve_request(family, backend)
    if requested != AUTO:
        backends_of(family)  # (loads the families; raises for an unknown one)
        by_name = _BY_NAME[family]
        if requested not in by_name:
            raise ValueError(
                f"backend: family {family!r} has no backend {requested!r} (from {source}); "
                f"choose 'auto' or one of {list(by_name)}"
            )
        b = by_name[requested]
        ok, why = b.availability()
        reasons = [f"unavailable: {why}"] if not ok else _reasons_of(b, inputs)
        if reasons:
            raise NotSupportedError(
                f"{family}: backend {requested!r} (chosen by {source}) cannot run these inputs:\n"
                + "\n".join(f"  - {r}" for r in reasons)
                + "\n(no fallback for an explicit backend; use backend='auto' to let jagattn choose)"
            )
        _log_choice(family, b, source)
        return b
    verdicts = _verdicts(family, inputs)
    for b, reasons in verdicts:
        if not reasons:
            _log_choice(family, b, "auto")
            return b
    raise NotSupportedError(
        f"{family}: no backend can run these inputs:\n"
        + "\n".join(f"  {b.name}: {'; '.join(reasons)}" for b, reasons in verdicts)
    )


def _log_choice(family: str, b: Backend, source: str) -> None:
    if torch.compiler.is_compiling():  # dynamo cannot trace logging calls (fullgraph would break)
        return
    key = (family, b.name)
    if key not in _LOGGED:
        _LOGGED.add(key)
        logger.info("jagattn: %s uses backend %r (%s)", family, b.name, source)


def explain_inputs(family: str, inputs: Any, backend: str = AUTO) -> Explanation:
    """The explain table for already-validated inputs (the public ``explain`` builds them)."""
    requested, source = _resolve_request(family, backend)
    verdicts = _verdicts(family, inputs)
    chosen = None
    if requested == AUTO:
        chosen = next((b.name for b, r in verdicts if not r), None)
    elif requested in {b.name for b, _ in verdicts}:
        chosen = next((b.name for b, r in verdicts if b.name == requested and not r), None)
    else:
        raise ValueError(f"backend: family {family!r} has no backend {requested!r} (from {source})")
    rows = tuple(Verdict(b.name, b.name == chosen, tuple(r)) for b, r in verdicts)
    note = "" if source in ("auto", "the backend= argument") else f"set by {source}"
    if chosen is None:
        note = (note + "; " if note else "") + "nothing can run: a call raises NotSupportedError"
    return Explanation(family, requested if requested != AUTO else AUTO, rows, note)
