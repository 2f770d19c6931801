"""Launch replay: an op call whose inputs match an earlier call's in everything but their addresses re-runs that
call's compiled kernels directly (``Replay``).

Why (issue #5, session 43, H200 host, HSTU ``recsys`` row): a forward + backward there costs ~0.9-1.3 ms of host
time against ~0.65 ms of kernels, so the host sets the row's time. Of the backward body's ~400 us, ~150-170 are
the launchers' own decisions (which kernel, Gluon or Triton, TMA checks, descriptors, constexprs) and ~150-180
Triton's dispatch (binding and specializing ~50 arguments per launch), against ~15-30 us per launch for the
compiled kernel's own launcher. Those decisions depend only on what the key below holds, so after the first call
they are the same every time.

How: ``Replay.key`` builds a key from the op's tensors (dtype, shape, strides, 16-byte alignment of the address,
device, and which arguments are one and the same tensor object), its other arguments, the current device and the
raw value of every ``JAGATTN_*`` variable the package has read so far (``env.env_snapshot``). On a miss the op
runs its normal path while recording: every ``launch.launch`` then goes through Triton as usual, and the recorder
keeps the ``CompiledKernel`` Triton ran, the resolved grid and the full argument list with each tensor replaced by
its position among the op's tensors (a host-side TMA descriptor by the tensor it was built on plus its address
offset). On a hit the recorded steps run
in order with this call's tensors (and descriptors rebuilt over them) on the current stream. Two forms:

- ``key`` / ``run`` / ``record`` (HSTU): the op allocates its outputs before, the tensors are all given;
- ``call`` (attention; the gated delta token loop): the body allocates outputs and scratch itself through ``alloc.new_empty``, which adds each
  new tensor to the recording's tensors; a replay allocates them again in the same order and returns the same
  slots as the body's result.

**The contract of a recorded body**: its only GPU work is ``launch.launch`` calls and ``alloc.new_empty``
allocations (a ``torch.zeros``, ``.copy_()`` or ``.contiguous()`` copy inside would not be replayed; one whose
result reaches a launch or the result spoils the recording, one on an op tensor would be lost silently: keep such
work outside, before the key, as ``attention/ops.py`` does with its ``.contiguous()`` calls).

Why that is exact: Triton's choice of compiled kernel depends on the arguments' types, dtypes, 16-byte alignment,
integer values (``== 1``, ``% 16``, width) and constexprs; the launchers' choices depend on shapes, strides,
dtypes, scalars, the device, the environment and module switches. The key holds all of them except module switches
(constants patched by tests: the test suite's ``monkeypatch`` clears every plan on each patch), and no launcher
reads a tensor's values on the host. A recording is thrown away (the op keeps its normal path for that key) when
any launch passes a tensor that is not one of the op's tensors (a scratch buffer the launcher allocated, a view),
an argument type it does not know, or runs a kernel the fast launch cannot reproduce (``launch._make_plan``).

Off: ``JAGATTN_LAUNCH_REPLAY=0`` (``1``: on for every op, also those whose ``Replay`` is off by default); never
under tracing (torch.compile, export, fake tensors, any mode), the Triton interpreter, launch hooks (profilers) or
a CPU. Thread-safe: a recording belongs to its thread; plans are only
added or replaced whole.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any

import torch

from . import launch as _launch
from .alloc import new_empty
from .env import env_flag, env_snapshot
from .tma import scratch_allocator_ready
from .triton_utils import interpreter_enabled

_MAX_PLANS = 256  # per op; a process that keeps making new keys just starts over
_TENSOR_TYPES = (torch.Tensor, torch.nn.Parameter)
_CUDA: list[bool] = []
_ALL: list[Replay] = []


def clear() -> None:
    """Forget every recorded plan (tests that patch module switches between calls)."""
    for r in _ALL:
        r._plans.clear()
        r._calls.clear()


def _available() -> bool:
    if not _CUDA:
        _CUDA.append(bool(_launch._SUPPORTED and _launch._HOOKS_OK and torch.cuda.is_available()))
    return _CUDA[0]


class _Ptr:
    """A descriptor's base at an address offset from a tensor's (``gluon._RowsBefore``'s shifted base)."""

    __slots__ = ("_t", "_p")

    def __init__(self, t: torch.Tensor, ptr: int):
        self._t, self._p = t, ptr

    @property
    def dtype(self) -> torch.dtype:
        return self._t.dtype

    def data_ptr(self) -> int:
        return self._p


class _Desc:
    """What the compiled launcher reads of a host-side TMA descriptor (``base.data_ptr()``, ``shape``, ``strides``,
    ``padding``; the block shape and layout are compiled into the kernel)."""

    __slots__ = ("base", "shape", "strides", "block_shape", "layout", "padding")

    def __init__(self, base, shape, strides, block_shape, layout, padding):
        self.base, self.shape, self.strides = base, shape, strides
        self.block_shape, self.layout, self.padding = block_shape, layout, padding


class _Step:
    __slots__ = ("plan", "grid", "consts", "tensors", "descs", "scratch")

    def __init__(self, plan, grid, consts, tensors, descs):
        self.plan, self.grid, self.consts, self.tensors, self.descs = plan, grid, consts, tensors, descs
        # device-side TMA descriptors need Triton's scratch allocator, a per-thread setting (tma.py): a plan recorded
        # in one thread and replayed in another (user threads, autograd's) installs it there first, as the normal
        # path's tma_loads_ok does; unknown size: assume it does
        size = getattr(getattr(getattr(plan, "kernel", None), "metadata", None), "global_scratch_size", None)
        self.scratch = size is None or size > 0


class _Recording:
    __slots__ = ("tensors", "steps", "ok", "allocs")

    def __init__(self, tensors: tuple):
        self.tensors = tensors
        self.steps: list[_Step] = []
        self.ok = True
        self.allocs: list[tuple] = []  # (shape, dtype, device) of the tensors adopt() added, in order

    def adopt(self, t: torch.Tensor, shape: tuple, dtype: torch.dtype, device: Any) -> None:
        """``t``, just allocated by ``alloc.new_empty`` inside the recording, becomes a tensor of the op (the
        next slot): a replay allocates it again the same way."""
        self.tensors = (*self.tensors, t)
        self.allocs.append((tuple(shape), dtype, device))


def recording() -> _Recording | None:
    """This thread's active recording (``launch.launch`` asks)."""
    return getattr(_launch._TLS, "rec", None)


def _slot(tensors: tuple, t: Any) -> int:
    for j, x in enumerate(tensors):
        if x is t:
            return j
    return -1


def record_launch(rec: _Recording, kernel: Any, grid: Any, args: tuple, kwargs: dict) -> None:
    """Launch ``kernel[grid](*args, **kwargs)`` through Triton and add it to ``rec`` (or spoil ``rec`` where the
    launch cannot be replayed exactly)."""
    info = _launch._info.get(id(kernel))
    if info is None:
        info = _launch._info[id(kernel)] = _launch._kernel_info(kernel)
    if info is False or info[1].pre_run_hooks:
        rec.ok = False
        _launch._plain(kernel)[grid](*args, **kwargs)
        return
    tuner, jit, _ = info
    compiled = _launch._plain(kernel)[grid](*args, **kwargs)
    if not rec.ok:
        return
    plan = _launch._make_plan(tuner, jit, compiled, len(args), kwargs)
    if plan is None:
        rec.ok = False
        return
    full = list(args)
    for name, value in plan.tail:
        full.append(kwargs[name] if value is _launch._FROM_KWARGS else value)
    g = grid(dict(zip(plan.names, full, strict=True))) if callable(grid) else grid
    g = (int(g[0]), int(g[1]) if len(g) > 1 else 1, int(g[2]) if len(g) > 2 else 1)
    tensors, descs = [], []
    for i, a in enumerate(full):
        t = type(a)
        if t in _TENSOR_TYPES:
            j = _slot(rec.tensors, a)
            # a tensor the op does not own (scratch, a view): its address is not this call's to replay
            if j < 0:
                rec.ok = False
                return
            tensors.append((i, j))
            full[i] = None
        elif t is _launch._GluonDesc and _launch._GluonDesc is not None:
            base = a.base
            owner = base if type(base) in _TENSOR_TYPES else getattr(base, "_t", None)
            j = _slot(rec.tensors, owner) if owner is not None else -1
            if j < 0:
                rec.ok = False
                return
            off = base.data_ptr() - owner.data_ptr()
            descs.append((i, j, off, list(a.shape), list(a.strides), a.block_shape, a.layout, a.padding))
            full[i] = None
        elif isinstance(a, (list, tuple, dict)) or hasattr(a, "data_ptr"):
            rec.ok = False  # a container or pointer-like object: not known to be address-free
            return
    rec.steps.append(_Step(plan, g, full, tuple(tensors), tuple(descs)))


_launch._RECORD = record_launch


class Replay:
    """The recorded launches of one op, by key (module docstring). Use::

    key = REPLAY.key(tensors, scalars)
    if not REPLAY.run(key, tensors):
        with REPLAY.record(key, tensors):
            ...  # the op's normal path (every launch through launch.launch)
    """

    def __init__(self, name: str, default: bool = True):
        self.name = name
        # on unless JAGATTN_LAUNCH_REPLAY says otherwise (0: every op off, 1: every op on)
        self.default = default
        self._plans: dict[tuple, tuple[_Step, ...]] = {}
        self._calls: dict[tuple, tuple] = {}  # call(): key -> (steps, allocations, result slots)
        _ALL.append(self)

    def key(self, tensors: tuple, scalars: tuple) -> tuple | None:
        """The call's key, or None where replay does not apply (off, tracing, interpreter, hooks, CPU, subclasses)."""
        if not env_flag("JAGATTN_LAUNCH_REPLAY", self.default) or not _available() or interpreter_enabled():
            return None
        if _launch._tracing():
            return None
        rt = _launch._RUNTIME
        if not (_launch._no_hook(rt.launch_enter_hook) and _launch._no_hook(rt.launch_exit_hook)):
            return None
        env = env_snapshot()
        if env is None:
            return None
        parts: list = [_launch._driver.active.get_current_device(), env, scalars]
        add = parts.append
        ids = []
        for t in tensors:
            if t is None:
                add(None)
            elif type(t) in _TENSOR_TYPES:
                add((t.dtype, t.shape, t.stride(), t.data_ptr() % 16 == 0, t.device))
                ids.append(id(t))
            else:
                return None
        # which arguments are one tensor object (attention's cu_seqlens_q is often cu_seqlens_k): launches find
        # their tensors by identity, so a plan recorded with one object in two places must never be replayed with
        # two different ones, nor the other way round
        add(None if len(set(ids)) == len(ids) else tuple(_slot(tensors, t) for t in tensors))
        return tuple(parts)

    def call(self, tensors: tuple, scalars: tuple, body):
        """``body()`` (the op's normal path, returning a tensor or a tuple of tensors), or its replay: for ops that
        allocate their outputs and scratch inside ``body`` through ``alloc.new_empty`` (adopted by the recording,
        allocated again by a replay in the same order). A result tensor that is neither an input nor such an
        allocation (``torch.zeros_like``, a view) keeps the normal path for the key."""
        key = self.key(tensors, scalars)
        if key is None:
            return body()
        entry = self._calls.get(key)
        if entry is not None:
            steps, allocs, out = entry
            slots = tensors + tuple(
                new_empty(shape, dtype=dtype, device=device) for shape, dtype, device in allocs
            )
            self._launch_steps(key, steps, slots)
            return slots[out] if type(out) is int else tuple(slots[j] for j in out)
        rec = self._begin(tensors)
        if rec is None:
            return body()
        try:
            result = body()
        finally:
            _launch._TLS.rec = None
        if rec.ok:
            single = type(result) in _TENSOR_TYPES
            outs = [_slot(rec.tensors, r) for r in ((result,) if single else result)]
            if all(j >= 0 for j in outs):
                if len(self._calls) >= _MAX_PLANS:
                    self._calls.clear()
                self._calls[key] = (tuple(rec.steps), tuple(rec.allocs), outs[0] if single else tuple(outs))
        return result

    def _begin(self, tensors: tuple) -> _Recording | None:
        outer = recording()
        if outer is not None:  # nested ops: neither recording would hold the other's launches
            outer.ok = False
            return None
        rec = _launch._TLS.rec = _Recording(tensors)
        return rec

    def run(self, key: tuple | None, tensors: tuple) -> bool:
        """Launch the plan recorded under ``key`` with ``tensors``; False (nothing launched) without one."""
        if key is None:
            return False
        steps = self._plans.get(key)
        if steps is None:
            return False
        self._launch_steps(key, steps, tensors)
        return True

    def _launch_steps(self, key: tuple, steps: tuple, tensors: tuple) -> None:
        active = _launch._driver.active
        stream = active.get_current_stream(key[0])
        for s in steps:
            a = s.consts.copy()
            for i, j in s.tensors:
                a[i] = tensors[j]
            for i, j, off, shape, strides, block, layout, pad in s.descs:
                t = tensors[j]
                a[i] = _Desc(
                    t if off == 0 else _Ptr(t, t.data_ptr() + off), shape, strides, block, layout, pad
                )
            if s.scratch:
                scratch_allocator_ready()
            p = s.plan
            p.run(s.grid[0], s.grid[1], s.grid[2], stream, p.function, p.packed, None, None, None, *a)

    @contextmanager
    def record(self, key: tuple | None, tensors: tuple):
        """Run the body (the op's normal path); with a key, keep its launches as the plan for ``key``."""
        if key is None:
            yield
            return
        rec = self._begin(tensors)
        if rec is None:
            yield
            return
        try:
            yield
        finally:
            _launch._TLS.rec = None
        if (
            rec.ok and not rec.allocs
        ):  # (record() is for ops that allocate before it: run() allocates nothing)
            if len(self._plans) >= _MAX_PLANS:
                self._plans.clear()
            self._plans[key] = tuple(rec.steps)
