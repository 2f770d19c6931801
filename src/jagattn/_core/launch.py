"""Eager launches of Triton and Gluon kernels without Triton's per-call dispatch (``launch``).

``launch(kernel, grid, *args, **kwargs)`` is how the package launches every Triton and Gluon kernel. By default it is
the plain launch (see the end of this docstring); with ``JAGATTN_FAST_LAUNCH=1`` it takes the fast path below.

``kernel[grid](*args, **kwargs)`` costs host time on every call before the driver sees the launch: the autotuner
re-keys its cache from the named arguments, the JIT binds every argument, specializes each one (type, 16-byte
alignment, ``== 1``), builds a cache key string and looks it up, then asks for the current stream and the launch
metadata. Measured on the H200 machine's host (session 39, ``benchmarks/host_layers.py``, HSTU recsys row):
~47 us per autotuned Triton launch and ~77-94 us per Gluon launch with TMA descriptors, against ~11 us for
``CompiledKernel.run`` itself. The recsys row's forward + backward is host-bound (three launches, ~1.2 ms of host
time against ~0.65 ms of kernels), so this is time the user waits for.

``launch`` does the same launch with one dictionary lookup instead: the first call for a given *specialization
fingerprint* goes through Triton as usual, which returns the ``CompiledKernel`` it ran (and the autotuner records
its ``best_config``); later calls with the same fingerprint call that kernel's launcher directly with the same
arguments Triton would pass (every parameter, constexprs included, in signature order) and the grid computed the
same way (a callable grid gets the bound arguments and the config's values).

The fingerprint is at least as fine as Triton's specialization, so two calls with the same fingerprint always map
to the same compiled kernel and config:

- tensors: dtype and whether the data pointer is 16-byte aligned (Triton: ``*dtype`` and the ``D`` attribute);
- ints: exact value for the autotuner's key parameters (they choose the config), otherwise ``== 1``, divisibility
  by 16 and the integer width class (Triton: the ``1`` constant, ``D``, ``i32`` / ``i64`` / ``u64``);
- floats, ``None``, bools: type (and value for bools and ``None``);
- Gluon TMA descriptors: the base tensor's dtype and alignment, rank, block shape, layout, padding and which
  strides are multiples of 16 (Triton passes the shape and strides at run time);
- constexpr keyword arguments: exact values; and the current device.

Anything this module does not recognise (another argument type, a ``triton.heuristics`` wrapper, pre-run or
launch hooks, a config ``pre_hook``, a Triton without these internals, the interpreter, tracing under
torch.compile / export) takes Triton's own path, unchanged.

**Opt-in** (``JAGATTN_FAST_LAUNCH=1``; off by default): on the H200 host it measured about even with Triton's own
dispatch (session 39 round 7b, same process: 33.6 against 37.6 us for the HSTU forward kernel, 65.6 against 60.1 us
for the Gluon dQ kernel with its descriptors built; computing the fingerprint of ~50 arguments costs most of what it
saves). The fingerprint was made cheaper after that measurement (per-kernel info cached, inline checks) but not
measured again, so no default rests on it. Off, ``launch`` is exactly the launch the code did before this module
(``wrap_triton(kernel)[grid](...)``, Gluon kernels called directly). Every gpu test passed with it on (rounds 9-12).
"""

from __future__ import annotations

import threading
from typing import Any

import torch

from .env import env_flag
from .library import _HOOKS, modes_active
from .triton_utils import interpreter_enabled

_HOOKS_OK = all(
    callable(h) for h in _HOOKS
)  # the private torch hooks behind modes_active (shared with library)

_MAX_ENTRIES = 512  # per kernel object; a process that keeps making new fingerprints just starts over

try:  # Triton's internals the fast path needs; without any of them every launch takes Triton's path
    from triton import knobs as _knobs
    from triton.runtime.autotuner import Autotuner as _Autotuner
    from triton.runtime.driver import driver as _driver
    from triton.runtime.jit import JITFunction as _JITFunction

    _RUNTIME = _knobs.runtime
    _SUPPORTED = hasattr(_RUNTIME, "launch_enter_hook") and hasattr(_RUNTIME, "launch_exit_hook")
except Exception:  # pragma: no cover - depends on the installed Triton
    _SUPPORTED = False

try:  # torch's switch that triton_op bodies turn off in eager mode on plain tensors (wrap_triton then only calls kernel)
    from torch._library.triton import is_wrap_triton_enabled as _wrap_triton_enabled
except Exception:  # pragma: no cover - depends on the installed torch
    _wrap_triton_enabled = None

# The plain launch calls ``kernel[grid](...)`` itself where ``wrap_triton(kernel)[grid](...)`` would do only that: not
# tracing, and torch's wrap_triton switch off (inside a ``triton_op`` body in eager mode, where every launch of the
# package runs). Making the wrapper and its grid-bound copy per launch cost ~20-40 us of host time on the CI-class CPU
# (session 51, torch 2.13: wrap_triton() 14-27 us, [grid] 7-14 us, against 0.6 us for kernel[grid]), and the gated
# delta forward of H16-8seqs is at the edge of host-bound on the H200 (0.45-0.79 ms of host time against ~0.76 ms on
# the GPU). On the device's host (session 52, H200 machine, torch 2.11, Triton 3.6, ``benchmarks/direct_launch_cost.py``)
# the wrapper costs far less: 1.3-1.7 us over ``kernel[grid]``'s 18 us, and DIRECT saves 0.3-0.9 us per launch (21.2 /
# 22.0 against 22.1 / 22.3 us); op-level A/Bs there cannot resolve it (their per-call host times move by up to 2x
# between identical runs). The 115 gpu tests of the launch / replay / export / compile / CUDA-graph / HSTU modules pass
# with it. ``JAGATTN_DIRECT_LAUNCH=0`` (read at import) restores the wrapper. A replaced ``torch.library.wrap_triton``
# (instrumentation, the tests' spies) is always called: direct only while it is still torch's own.
DIRECT = env_flag("JAGATTN_DIRECT_LAUNCH", True)
_TORCH_WRAP = getattr(torch.library, "wrap_triton", None)

try:  # Gluon's host-side descriptor (Hopper); absent: descriptors are "not recognised" (Triton's path)
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor as _GluonDesc
except Exception:  # pragma: no cover - depends on the installed Triton
    _GluonDesc = None


class _Plan:
    """What a fingerprint launches: the compiled kernel and how to build its argument list (the grid is each
    call's own)."""

    __slots__ = ("kernel", "run", "function", "packed", "names", "tail")

    def __init__(self, kernel, names, tail):
        self.kernel = kernel
        self.run = kernel.run  # the driver's launcher (loads the module on first access)
        self.function = kernel.function
        self.packed = kernel.packed_metadata
        self.names = names  # every parameter name, signature order
        self.tail = tail  # (name, value or _FROM_KWARGS) for the parameters after the positional ones


_FROM_KWARGS = object()
# launch replay (replay.py): a thread's active recording takes every launch (``_RECORD`` set by replay.py)
_TLS = threading.local()
_RECORD: Any = None
# id(kernel object) -> (device, fingerprint) -> plan (None: this fingerprint always takes Triton's path)
_plans: dict[int, dict[tuple, _Plan | None]] = {}
_kernels: dict[int, Any] = {}  # id -> the kernel object itself (keeps the id unique while cached)


def clear() -> None:
    """Forget every cached plan (tests that change a kernel's environment between calls)."""
    _plans.clear()
    _info.clear()
    _kernels.clear()


_CUDA: list[bool] = []  # torch.cuda.is_available(), asked once


def enabled() -> bool:
    """The fast path is on: ``JAGATTN_FAST_LAUNCH=1``, Triton's internals found, a CUDA device, not the interpreter."""
    if not env_flag("JAGATTN_FAST_LAUNCH", False):
        return False
    if not _CUDA:
        _CUDA.append(bool(_SUPPORTED and torch.cuda.is_available()))
    return _CUDA[0] and not interpreter_enabled()


_info: dict[int, tuple | bool] = {}  # id(kernel) -> (autotuner or None, JITFunction, key indices) or False


def _kernel_info(kernel) -> tuple | bool:
    """``(autotuner or None, JITFunction, indices of the autotuner's key parameters)`` for a plain or autotuned
    kernel; False for anything else (a ``triton.heuristics`` wrapper, ...), which always takes Triton's path."""
    _kernels[id(kernel)] = kernel  # keeps the id unique while cached
    if isinstance(kernel, _JITFunction):
        return None, kernel, frozenset()
    if isinstance(kernel, _Autotuner) and isinstance(kernel.fn, _JITFunction):
        names = kernel.fn.arg_names
        return kernel, kernel.fn, frozenset(i for i, n in enumerate(names) if n in kernel.keys)
    return False


def _fingerprint(args: tuple, exact: frozenset, kwargs: dict) -> tuple | None:
    """The specialization fingerprint (module docstring) of a call; ``exact``: the indices of the positional
    arguments that are the autotuner's key. None for an argument it does not know."""
    out = []
    add = out.append
    for i, a in enumerate(args):
        t = type(a)
        if t is torch.Tensor or t is torch.nn.Parameter:
            add((a.dtype, a.data_ptr() % 16 == 0))
        elif t is int:
            add(a if i in exact else (a == 1, a % 16 == 0, -(2**31) <= a < 2**31, a < 2**63))
        elif t is float:
            add(float)
        elif t is bool or a is None:
            add(a)
        elif t is _GluonDesc:
            base = a.base
            if type(base) is not torch.Tensor:
                return None
            add(
                (base.dtype, base.data_ptr() % 16 == 0, tuple([s % 16 == 0 for s in a.strides]), len(a.shape),
                 tuple(a.block_shape), a.layout, getattr(a, "padding", None), getattr(a, "round_f32_to_tf32", None))
            )  # fmt: skip
        else:
            return None  # not recognised: Triton's path
    add(tuple(kwargs.items()))  # constexprs and options (a tensor here: no plan, see _make_plan)
    return tuple(out)


def _plain(kernel: Any) -> Any:
    """What the code launched before this module: Gluon kernels directly (eager only by construction),
    Triton kernels through ``wrap_triton`` (a higher-order op while tracing, the kernel itself inside a
    ``triton_op`` body in eager mode)."""
    if getattr(kernel, "is_gluon", None) is not None and kernel.is_gluon():
        return kernel
    try:
        return torch.library.wrap_triton(kernel)
    except RuntimeError:
        # TRITON_INTERPRET=1: torch >= 2.13's wrap_triton returns the interpreter's kernel as it is, torch 2.11's
        # raises "wrap_triton only works on functions annotated with triton.jit" (session 47: every gated delta
        # call on the CPU with the device's torch 2.11 + Triton 3.6 failed there); do what 2.13 does
        if type(kernel).__name__ == "InterpretedFunction":
            return kernel
        raise


def _no_hook(hook: Any) -> bool:
    """No launch hook: None, or (Triton >= 3.5) an empty ``HookChain``, which Triton calls on every launch with
    the launch metadata it builds for it; a profiler adds its hooks to the chain."""
    return hook is None or (type(getattr(hook, "calls", None)) is list and not hook.calls)


def _tracing() -> bool:
    """torch.compile / export tracing, fake tensors, functorch transforms or any torch function / dispatch mode."""
    return torch.compiler.is_compiling() or modes_active()


def launch(kernel: Any, grid: Any, *args: Any, **kwargs: Any) -> None:
    """``kernel[grid](*args, **kwargs)`` for a ``@triton.jit`` / ``@gluon.jit`` kernel, optionally autotuned.

    By default, and always while tracing (torch.compile, export, fake tensors, any mode), a Triton kernel goes
    through ``wrap_triton(kernel)[grid](...)`` (Inductor sees it) and a Gluon kernel is called directly, except that
    in eager mode with torch's wrap_triton switch off (a ``triton_op`` body on plain tensors) ``kernel[grid](...)`` is
    called itself (``DIRECT``: what the wrapper would run; not when ``torch.library.wrap_triton`` was replaced);
    with ``JAGATTN_FAST_LAUNCH=1``, in plain eager mode on a GPU, the fast path above.
    Arguments as Triton takes them: the positional ones first, constexprs by keyword. Inside an op's
    ``replay.Replay.record`` the launch goes through Triton and is recorded (``replay.record_launch``)."""
    rec = getattr(_TLS, "rec", None)
    if rec is not None:
        _RECORD(rec, kernel, grid, args, kwargs)
        return
    if not enabled() or not _HOOKS_OK:
        if (
            DIRECT
            and _wrap_triton_enabled is not None
            and torch.library.wrap_triton is _TORCH_WRAP
            and not _wrap_triton_enabled()
            and not _tracing()
        ):
            # what wrap_triton(kernel)[grid](...) runs here, without making the wrappers
            kernel[grid](*args, **kwargs)
        else:
            _plain(kernel)[grid](*args, **kwargs)
        return
    if _tracing():
        _plain(kernel)[grid](*args, **kwargs)
        return
    info = _info.get(id(kernel))
    if info is None:
        info = _info[id(kernel)] = _kernel_info(kernel)
    if info is False:
        _plain(kernel)[grid](*args, **kwargs)
        return
    tuner, jit, exact = info
    runtime = _RUNTIME
    if not (_no_hook(runtime.launch_enter_hook) and _no_hook(runtime.launch_exit_hook)) or jit.pre_run_hooks:
        _plain(kernel)[grid](*args, **kwargs)  # a profiler's hooks want Triton's launch metadata
        return
    active = _driver.active  # (a lazy proxy; resolved at the first launch, not at import)
    device = active.get_current_device()
    fp = _fingerprint(args, exact, kwargs)
    if fp is None:  # an argument it does not know (a tensor subclass, ...): as before
        _plain(kernel)[grid](*args, **kwargs)
        return
    key = (device, fp)
    table = _plans.get(id(kernel))
    try:
        plan = table.get(key, _FROM_KWARGS) if table is not None else _FROM_KWARGS
    except TypeError:  # an unhashable part (a layout object of another Triton): Triton's path
        _plain(kernel)[grid](*args, **kwargs)
        return
    if plan is _FROM_KWARGS:  # first call with this fingerprint: Triton's path, then remember what it ran
        compiled = kernel[grid](*args, **kwargs)
        _remember(kernel, key, _make_plan(tuner, jit, compiled, len(args), kwargs))
        return
    if plan is None:
        _plain(kernel)[grid](*args, **kwargs)
        return
    full = list(args)
    for name, value in plan.tail:
        full.append(kwargs[name] if value is _FROM_KWARGS else value)
    # the grid of *this* call (a tuple or the callable, as Triton canonicalizes it): never the plan's first one
    g = grid(dict(zip(plan.names, full, strict=True))) if callable(grid) else grid
    if len(g) != 3:
        g = (g[0], g[1] if len(g) > 1 else 1, g[2] if len(g) > 2 else 1)
    stream = active.get_current_stream(device)
    plan.run(g[0], g[1], g[2], stream, plan.function, plan.packed, None, None, None, *full)


def _remember(kernel: Any, key: tuple, plan: _Plan | None) -> None:
    table = _plans.get(id(kernel))
    if table is None or len(table) >= _MAX_ENTRIES:  # (_kernel_info already keeps the kernel object alive)
        table = _plans[id(kernel)] = {}
    table[key] = plan


def _make_plan(tuner, jit, compiled, n_args: int, kwargs: dict) -> _Plan | None:
    """The plan for what Triton just ran, or None where the fast path cannot reproduce it exactly."""
    if compiled is None or not all(hasattr(compiled, a) for a in ("run", "function", "packed_metadata")):
        return None
    if any(isinstance(v, torch.Tensor) for v in kwargs.values()):
        return None  # a tensor by keyword: its alignment is not in the fingerprint
    config_kwargs: dict = {}
    if tuner is not None:
        config = getattr(tuner, "best_config", None)
        if config is None or getattr(config, "pre_hook", None) is not None:
            return None
        config_kwargs = dict(config.kwargs)
    params = jit.params
    names = list(jit.arg_names)
    if len(params) != len(names) or n_args > len(names):
        return None
    tail = []
    for p in params[n_args:]:
        name = p.name
        if name in kwargs:
            tail.append((name, _FROM_KWARGS))
        elif name in config_kwargs:
            tail.append((name, config_kwargs[name]))
        elif getattr(p, "has_default", False):
            tail.append((name, p.default))
        else:
            return None
    try:
        return _Plan(compiled, names, tuple(tail))
    except Exception:  # the launcher could not be built: Triton's path keeps raising its own error
        return None
