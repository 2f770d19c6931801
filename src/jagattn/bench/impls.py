"""What the benchmark times: jagattn backends (through the public functions) and peer adapters.

An :class:`Impl` is prepared once per problem (block masks, dtype conversions of index tensors
and other setup happen there, outside the timed region) and returns a :class:`Prepared` whose
``fn(tensors)`` runs the forward on the packed inputs and returns ``o`` in the packed layout
``[T, H, Dv]``. Layout changes a peer needs (a batch dim of 1, ``[B, H, T, D]`` views) happen
inside ``fn`` as views, so gradients land on the packed leaves and are compared as they are.

A missing or refusing implementation raises :class:`Unavailable` with a reason, which the
table shows as ``n/a (reason)``; nothing is silently dropped.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterator

import torch

from .cases import FAMILIES, Problem


class Unavailable(Exception):
    """This implementation cannot run this problem here; ``str(exc)`` says why."""


@dataclasses.dataclass
class Prepared:
    fn: Callable[[dict[str, torch.Tensor]], torch.Tensor]
    label: str = ""
    note: str = ""


class Impl:
    """Base class. ``kind`` is ``"jagattn"`` or ``"peer"``; ``name`` is unique within a family."""

    name: str = ""
    family: str = ""
    kind: str = "peer"
    #: the reference: checked on the check subset only and timed only below --ref-max-tokens
    is_reference: bool = False

    def unavailable_reason(self) -> str | None:
        """Why this implementation cannot run in this process at all (None: it can)."""
        return None

    def version(self) -> str:
        return ""

    def prepare(self, p: Problem) -> Prepared:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<{self.kind} {self.family}/{self.name}>"


class JagattnImpl(Impl):
    """A jagattn backend, called through the family's public function with ``backend=name``."""

    kind = "jagattn"

    def __init__(self, family: str, backend: str) -> None:
        self.family = family
        self.backend = backend
        self.name = backend
        self.is_reference = backend == "reference"

    def version(self) -> str:
        import jagattn

        return jagattn.__version__

    def unavailable_reason(self) -> str | None:
        from .._core import dispatch

        for b in dispatch.backends_of(self.family):
            if b.name == self.backend:
                ok, why = b.availability()
                return None if ok else why
        return f"jagattn family {self.family!r} has no backend {self.backend!r}"

    def prepare(self, p: Problem) -> Prepared:
        why = self.unavailable_reason()
        if why:
            raise Unavailable(why)
        fam = FAMILIES[self.family]
        verdict = fam.explain(p, self.backend)
        if verdict.chosen != self.backend:
            reasons = [r for row in verdict.rows if row.backend == self.backend for r in row.reasons]
            raise Unavailable("; ".join(reasons) or "rejected by jagattn.explain")
        backend = self.backend
        return Prepared(lambda t: fam.call(p, t, backend))


# ---------------------------------------------------------------------------------------------
# registry of peers (peers.py registers the built-in adapters; tests may add their own)

_PEERS: list[Impl] = []


def register_peer(impl: Impl) -> None:
    """Add a peer adapter (``kind`` is forced to ``"peer"``); a same-named one is replaced."""
    impl.kind = "peer"
    unregister_peer(impl.family, impl.name)
    _PEERS.append(impl)


def unregister_peer(family: str, name: str) -> None:
    _PEERS[:] = [p for p in _PEERS if not (p.family == family and p.name == name)]


@contextlib.contextmanager
def extra_peer(impl: Impl) -> Iterator[Impl]:
    """Register ``impl`` for the duration of a ``with`` block (tests use it to inject a wrong one)."""
    register_peer(impl)
    try:
        yield impl
    finally:
        unregister_peer(impl.family, impl.name)


def peers_of(family: str) -> list[Impl]:
    from . import peers  # noqa: F401  (registers the built-in adapters once)

    return [p for p in _PEERS if p.family == family]


def jagattn_impls(family: str) -> tuple[list[Impl], str | None]:
    """The jagattn backends of ``family`` in dispatch order, or ``([], reason)`` if the family is missing."""
    try:
        import jagattn  # noqa: F401

        from .._core import dispatch

        return [JagattnImpl(family, b.name) for b in dispatch.backends_of(family)], None
    except Exception as exc:  # a family still being written must not stop the others
        return [], f"jagattn family {family!r} not available: {type(exc).__name__}: {exc}"


def resolve(family: str, spec: str) -> tuple[list[Impl], list[str]]:
    """The implementations ``--backends`` names for one family, and notes for the table.

    ``spec`` is ``all`` (default), or a comma list of: a jagattn backend name (``triton``,
    ``reference``, also written ``jagattn.<name>``), a peer name (``torch_varlen``, ``flex``,
    ``flash_attn``, ``fla``, ``gr_triton``, also ``peer.<name>``), ``jagattn`` (all of ours)
    or ``peers`` (all peers); ``family:<word>`` applies a word to one family only. A name that belongs only to another family is skipped for this
    one; a jagattn backend name this family lacks (``triton`` before it lands) is kept as an
    implementation that reports ``n/a (reason)``.

    Raises:
        ValueError: a name that no family knows, listing the known names.
    """
    ours, missing = jagattn_impls(family)
    notes = [missing] if missing else []
    theirs = peers_of(family)
    # jagattn backends that wrap a peer (attention's torch_varlen / flash_attn adapters) are not
    # "ours" for a comparison: "all"/"jagattn" skip them, and they are only run when asked for as
    # "jagattn.<name>", under that name (the bare name means the peer).
    peer_names = {p.name for p in theirs}
    adapters = [o for o in ours if o.name in peer_names]
    for o in adapters:
        o.name = f"jagattn.{o.backend}"
    ours = [o for o in ours if o not in adapters]
    words = [w.strip() for w in spec.split(",") if w.strip()] or ["all"]
    out: list[Impl] = []

    def add(items: list[Impl]) -> None:
        for it in items:
            if all(it is not o for o in out):
                out.append(it)

    for w in words:
        if ":" in w:  # "family:name" applies to that family only
            fam, _, w = w.partition(":")
            if fam not in FAMILIES:
                raise ValueError(f"backends: unknown family {fam!r} in {fam}:{w}; families: {list(FAMILIES)}")
            if fam != family:
                continue
        if w == "all":
            add(ours + theirs)
        elif w in ("jagattn", "ours"):
            add(ours)
        elif w == "peers":
            add(theirs)
        else:
            kind = None
            name = w
            if w.startswith("jagattn."):
                kind, name = "jagattn", w.split(".", 1)[1]
            elif w.startswith("peer."):
                kind, name = "peer", w.split(".", 1)[1]
            if kind == "jagattn":
                hits = [i for i in ours + adapters if i.backend == name]
            else:
                hits = [i for i in theirs + ours if i.name == name and kind in (None, i.kind)]
            if hits:
                add(hits[:1])
                continue
            elsewhere = [
                i
                for f in FAMILIES
                if f != family
                for i in jagattn_impls(f)[0] + peers_of(f)
                if i.name == name
            ]
            if kind != "peer" and name in _JAGATTN_NAMES:
                pass  # a jagattn-wide name this family lacks: an n/a row, not an error
            elif elsewhere:
                continue
            else:
                raise ValueError(f"backends: unknown implementation {w!r}; known: {', '.join(known_names())}")
            why = missing or f"jagattn family {family!r} has no backend {name!r} (yet)"
            add([MissingImpl(family, name, why)])
    return out, notes


# Backend names jagattn has or plans (SPEC/DESIGN): asking for one a family lacks is an n/a row.
_JAGATTN_NAMES = ("triton", "reference")


class MissingImpl(Impl):
    """A requested jagattn backend this family does not have: always ``n/a (reason)``."""

    kind = "jagattn"

    def __init__(self, family: str, name: str, reason: str) -> None:
        self.family, self.name, self.reason = family, name, reason

    def unavailable_reason(self) -> str | None:
        return self.reason

    def prepare(self, p: Problem) -> Prepared:
        raise Unavailable(self.reason)


def known_names() -> list[str]:
    names: list[str] = []
    for fam in FAMILIES:
        for it in jagattn_impls(fam)[0] + peers_of(fam):
            if it.name not in names:
                names.append(it.name)
    for n in _JAGATTN_NAMES:
        if n not in names:
            names.append(n)
    return names
