"""Helpers over ``torch.library`` shared by the families' ``ops.py``.

Every kernel path is a registered op in the ``jagattn`` namespace (``torch.library.triton_op``
with ``wrap_triton`` for Triton kernels, so Inductor sees through them), with a fake impl and
``register_autograd``. Fixed arity: a separate op per output signature rather than Optional outputs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from .env import env_flag

NAMESPACE = "jagattn"


def qualname(name: str) -> str:
    """``jagattn::<name>``"""
    return f"{NAMESPACE}::{name}"


# ---------------------------------------------------------------------------------------------
# eager fast path
#
# A call through the dispatcher costs host time that small inputs feel: measured on the CI host with the
# kernel launch stubbed (session 7), ``jagattn::hstu_fwd`` took 84 us per call against 36 us for its
# Python body, 140 us with an input requiring grad (the custom op's autograd wrapper, the redispatch and
# a dynamo-disabled frame per call). On plain tensors in plain eager mode none of that machinery does
# anything, so ``eager_call`` runs the op's body directly, inside an ``autograd.Function`` built from the
# same ``setup_context`` / ``backward`` when a gradient can flow. Anything else goes through the
# registered op unchanged: torch.compile / export tracing, fake or functional tensors and every other
# tensor subclass, active torch-function or dispatch modes (``set_default_device``, FakeTensorMode,
# FlopCounterMode, ...), functorch transforms, ops without a fast entry (e.g. a test's spy) and
# ``JAGATTN_EAGER_FAST=0``.

_FAST: dict[int, tuple[Callable[..., Any], type | None]] = {}  # id(op) -> (body, autograd.Function)
EAGER_FAST = env_flag("JAGATTN_EAGER_FAST", True)
# private torch hooks the fast path needs; on a torch without one of them it is simply never taken
_C = torch._C
_HOOKS = tuple(
    getattr(_C, n, None)
    for n in (
        "_is_torch_function_mode_enabled",
        "_len_torch_dispatch_stack",
        "_are_functorch_transforms_active",
    )
)
try:  # wrap_triton launches the kernel itself instead of dispatching a higher-order op (as triton_op's body)
    from torch._library.triton import set_wrap_triton_enabled as _set_wrap_triton_enabled
except ImportError:  # pragma: no cover - depends on the torch version
    _set_wrap_triton_enabled = None
_SUPPORTED = all(callable(h) for h in _HOOKS) and _set_wrap_triton_enabled is not None


def register_eager(op: Any, setup_context: Callable | None = None, backward: Callable | None = None) -> None:
    """Give the registered op ``op`` (a ``triton_op`` / ``custom_op``) an eager fast path; with
    ``setup_context`` and ``backward`` (those of its ``register_autograd``) also when gradients flow.
    Without the op's body (a torch version that names it differently) nothing is registered."""
    body = getattr(op, "_init_fn", None)
    if not callable(body) or not _SUPPORTED:
        return

    if _sets_wrap_triton(body):
        impl = body  # (its own ``set_wrap_triton_enabled(False)``: a second one cost ~1.5 us per call)
    else:

        def impl(*args):
            with _set_wrap_triton_enabled(False):  # what triton_op's body does (some torch versions only)
                return body(*args)

    function = None
    if setup_context is not None and backward is not None:
        name = str(getattr(op, "_name", "op")).replace(":", "_")

        # the old-style ``forward(ctx, *args)`` calling setup_context itself: a Function that defines
        # ``setup_context`` makes every ``apply`` bind its arguments through ``inspect.signature``
        # (torch 2.11: ~12% of the attention forward's host time under cProfile, session 14 round 7)
        def forward(ctx, *args):
            out = impl(*args)
            setup_context(ctx, args, out)
            return out

        function = type(
            f"{name}_eager",
            (torch.autograd.Function,),
            {"forward": staticmethod(forward), "backward": staticmethod(backward)},
        )
    _FAST[id(op)] = (impl, function)  # registered ops live as long as their module: ids stay unique


def saveable(t: torch.Tensor | None) -> torch.Tensor | None:
    """``t`` as ``save_for_backward`` takes it: an inference tensor (made under ``torch.inference_mode``, e.g.
    offsets built by a no-grad data pipeline) is cloned into a normal one. For the integer offsets only: before
    session 46 such ``cu_seqlens`` made a training call fail ("Inference tensors cannot be saved for backward")
    where the reference backend ran it."""
    return t.clone() if t is not None and t.is_inference() else t


def forbid_double_backward(op: Any, family: str) -> None:
    """Give a backward op ``op`` an autograd formula that raises a clear error: a gradient of its gradients
    (``autograd.grad(..., create_graph=True)`` and a second grad through it) is not implemented by the Triton
    kernels. Without it the second grad raised torch's "no autograd formula was registered" for an op the user
    never called. A backward with ``create_graph=True`` alone still works (the error comes only if the second
    grad reaches this op)."""

    def setup_context(ctx, inputs, output) -> None:
        pass

    def backward(ctx, *grads):
        raise RuntimeError(
            f"jagattn {family}: double backward (a gradient of the gradients this op computed, e.g. "
            "torch.autograd.grad(..., create_graph=True) and then a grad through that result) is not supported by "
            "the Triton backend; backend='reference' supports it"
        )

    op.register_autograd(backward, setup_context=setup_context)
    register_eager(op, setup_context, backward)


def _sets_wrap_triton(body: Callable) -> bool:
    """Whether ``body`` is ``triton_op``'s ``backend_fn``, which disables ``wrap_triton`` itself."""
    return getattr(body, "__module__", None) == "torch._library.triton" and getattr(
        body, "__qualname__", ""
    ).endswith("backend_fn")


_NOT_PLAIN, _PLAIN, _PLAIN_GRAD = 0, 1, 2


def modes_active() -> bool:
    """A torch-function or dispatch mode (fake tensors, export / proxy tracing, FlopCounterMode, ...) or a
    functorch transform is active: not plain eager mode (torch.compile's own tracing aside)."""
    function_mode, dispatch_stack, functorch = _HOOKS
    return function_mode() or dispatch_stack() > 0 or functorch()


def _plain_kind(args: tuple) -> int:
    """``_NOT_PLAIN`` unless plain eager mode with plain tensors; then ``_PLAIN_GRAD`` when a tensor
    argument requires grad (grad mode aside), else ``_PLAIN``. One pass over the arguments."""
    if modes_active():  # (eager_call checked compiling first)
        return _NOT_PLAIN
    kind = _PLAIN
    for a in args:
        if isinstance(a, torch.Tensor):
            if type(a) is not torch.Tensor and type(a) is not torch.nn.Parameter:
                return _NOT_PLAIN
            if a.requires_grad:
                kind = _PLAIN_GRAD
    return kind


def _plain_eager(args: tuple) -> bool:
    return _plain_kind(args) != _NOT_PLAIN


def _other_cuda_device(args: tuple) -> torch.device | None:
    """The device of the first tensor argument when it is a CUDA device other than the current one.

    Triton launches on the current device's stream, and neither the dispatcher nor the fast path sets
    a device guard: inputs on ``cuda:1`` while ``cuda:0`` is current would be read by a kernel on the
    wrong GPU. The public APIs check that every tensor shares one device, so the first one decides."""
    for a in args:
        if isinstance(a, torch.Tensor):
            # plain tensors only (fake ones trace, they launch nothing); one GPU: nothing to guard
            if (
                type(a) not in (torch.Tensor, torch.nn.Parameter)
                or not a.is_cuda
                or torch.cuda.device_count() < 2
            ):
                return None
            return a.device if a.device.index != torch.cuda.current_device() else None
    return None


def eager_call(op: Any, *args: Any) -> Any:
    """``op(*args)``, through the fast path when it applies (see above); bitwise the same results.
    Eager calls run on the inputs' CUDA device (a device guard when it is not the current one)."""
    if torch.compiler.is_compiling():  # first: dynamo folds it; Inductor's wrapper guards its own launches
        return op(*args)
    device = _other_cuda_device(args)
    if device is not None:
        with torch.cuda.device(device):
            return _eager_call(op, args)
    return _eager_call(op, args)


def _eager_call(op: Any, args: tuple) -> Any:
    entry = _FAST.get(id(op))
    if entry is None or not EAGER_FAST:
        return op(*args)
    kind = _plain_kind(args)
    if kind == _NOT_PLAIN:
        return op(*args)
    impl, function = entry
    if kind == _PLAIN_GRAD and torch.is_grad_enabled():
        if function is None:
            return op(*args)  # no autograd formula of ours: let the dispatcher say so
        return function.apply(*args)
    return impl(*args)
