"""Test setup. On a machine without CUDA, Triton kernels run under the interpreter, which must be
switched on before triton is imported; every kernel output is poisoned with NaN before it is
written so an unwritten element fails the comparison; the fp32 route of tiny batches is off unless a
test turns it on."""

import importlib.util
import os
import sys
from pathlib import Path


def _share_cores_between_xdist_workers() -> None:
    """Under pytest-xdist, give each worker its share of the cores for the thread pools of torch and of numpy's
    OpenBLAS (the interpreter's ``tl.dot``), before torch (which loads numpy; OpenBLAS reads the variable once, at
    load) is imported. Left at 2 threads each, ``make test``'s 2 workers ran 4 pools on the 2-core CI machine,
    whose idle threads spin-wait for work: two processes running the gated delta interpreter tests at once
    (test_triton_matches_reference, 8 tests each) took 47-110 s wall at 2 threads and 25-73 s at 1 (five
    alternating pairs; 2.0x, 1.9x, 1.5x, 1.1x, 1.9x). What is computed is unchanged (the tests compare to
    tolerances, or bitwise within one process); a variable already set wins."""
    workers = os.environ.get("PYTEST_XDIST_WORKER_COUNT", "")
    if not workers.isdigit() or int(workers) < 1:
        return
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    threads = str(max(1, cores // int(workers)))
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, threads)


_share_cores_between_xdist_workers()

import torch  # noqa: E402

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")
os.environ.setdefault("JAGATTN_POISON", "1")
# The suite's small fp16 batches test the half-precision kernels themselves: by default tiny batches run
# on fp32 copies instead (_core/precision.py), which tests/test_fp32_route.py covers with the route on.
os.environ.setdefault("JAGATTN_SMALL_FP32", "off")

import pytest  # noqa: E402


def _skip_nested_interpreter_patching() -> bool:
    """Speed up the Triton interpreter (CI time only; what it computes is unchanged).

    The interpreter patches ``triton.language`` (``inspect.getmembers`` over the modules) at every launch,
    which is right, and again at every call of a nested ``@triton.jit`` helper (``_c``, ``_exp``, ``_l2n``,
    ... inside the chunk loops), where the launch's patch is still in place: profiled on a gated delta gk
    test (Triton 3.9), those repeats were ~30% of the run; two gated delta tests run serially took 50.7 s
    without this and 32.5 s with it (session 29). While a launch's patch scope is open, a nested call whose
    language modules that launch already patched gets an empty scope instead; a wrong skip would fail
    loudly (an unpatched builtin raises "_semantic argument must be provided"). Installed only for the
    interpreter layout this was written against (``_patch_lang`` returning a ``_LangPatchScope``, as in
    Triton 3.6-3.9); otherwise the interpreter is left alone; JAGATTN_TEST_FAST_INTERPRETER=0 turns it off. Launches run one at a time
    (the interpreter is not reentrant across threads either: one grid index for the process)."""
    try:
        from triton.runtime import interpreter as ti
    except ImportError:
        return False
    orig = getattr(ti, "_patch_lang", None)
    if orig is None or not hasattr(ti, "_LangPatchScope") or getattr(orig, "_jagattn_fast", False):
        return False
    import inspect
    import threading

    import triton.language as tl

    active: list[set[int]] = []  # the language modules patched by each open launch scope
    owner: list[int] = []  # the thread that opened them

    class _Empty:
        def restore(self) -> None:
            pass

    # per globals dict (kept alive here, so its id stays its own): a module's language imports do not change, and
    # scanning the globals at every nested call was ~4% of a gated delta gk test (session 36)
    langs_of: dict[int, tuple[dict, frozenset[int]]] = {}

    def _langs(fn) -> set[int]:
        g = fn.__globals__
        if id(g) not in langs_of:
            langs_of[id(g)] = (
                g,
                frozenset(id(v) for v in g.values() if inspect.ismodule(v) and v in (tl, tl.core)),
            )
        return set(langs_of[id(g)][1])

    def patch_lang(fn):
        me = threading.get_ident()
        if active and owner[-1] == me:  # a nested helper call inside this thread's launch
            langs = _langs(fn)
            if langs <= active[-1]:
                return _Empty()
            # e.g. tl.sum (triton.language.standard sees tl.core, which a kernel module's launch did not
            # patch): the interpreter never restores a nested call's scope, so its patch holds for the rest
            # of the launch (and after it, as without this wrapper)
            active[-1] |= langs
            return orig(fn)
        scope = orig(fn)  # a launch: its GridExecutor restores the scope when the grid is done
        restore = scope.restore
        active.append(_langs(fn))
        owner.append(me)

        def close() -> None:
            active.pop()
            owner.pop()
            restore()

        scope.restore = close
        return scope

    patch_lang._jagattn_fast = True
    ti._patch_lang = patch_lang
    return True


def _memoize_interpreter_np_dtype() -> bool:
    """Speed up the Triton interpreter (CI time only; what it computes is unchanged).

    ``_get_np_dtype`` (the numpy dtype of a Triton type) builds its 20-entry table at every call, and the
    interpreter calls it for every constant, splat, cast, load and store: ~37k calls in one gated delta fwd+bwd.
    Its answer depends only on the element type (a block of T maps as T; every pointer and block of pointers to
    uint64), so it is looked up once per element type (block and pointer types are unhashable: never keys).
    Five alternating pairs in one process (Triton 3.9), mean s: a gated delta fp16 fwd+bwd of the suite's usual
    shape 5.09 -> 4.12, an HSTU fp16 fwd+bwd (LENS, 2 heads) 2.84 -> 2.53, outputs and gradients bitwise the same.
    Only where the interpreter has this function; JAGATTN_TEST_FAST_INTERPRETER=0 turns it off."""
    try:
        from triton.runtime import interpreter as ti
    except ImportError:
        return False
    orig = getattr(ti, "_get_np_dtype", None)
    if orig is None or getattr(orig, "_jagattn_fast", False):
        return False
    import triton.language as tl

    cache: dict = {}

    def get_np_dtype(tt_dtype):
        elt = tt_dtype.element_ty if isinstance(tt_dtype, tl.block_type) else tt_dtype
        key = tl.pointer_type if isinstance(elt, tl.pointer_type) else elt  # every pointer: one answer
        try:
            return cache[key]
        except KeyError:
            cache[key] = np_dtype = orig(elt)
            return np_dtype
        except TypeError:  # an unhashable element type (none in Triton 3.9): the interpreter's own lookup
            return orig(tt_dtype)

    get_np_dtype._jagattn_fast = True
    ti._get_np_dtype = get_np_dtype
    return True


if os.environ.get("TRITON_INTERPRET") == "1" and os.environ.get("JAGATTN_TEST_FAST_INTERPRETER", "1") == "1":
    _skip_nested_interpreter_patching()
    _memoize_interpreter_np_dtype()


def pytest_collection_modifyitems(config, items):
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU (run on the device machine)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _release_cached_gpu_memory():
    """After each test on a GPU machine, hand PyTorch's cached blocks back to the driver: the device rounds run
    several pytest processes on one GPU (benchmarks/gpu_tests_parallel.py), and each process's cache of its
    largest test's buffers starved the others (session 36 round 6: 25 of 106 gpu tests failed out of memory with
    8 processes on a 140 GB H200)."""
    yield
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.empty_cache()


class _ReplayClearingMonkeyPatch(pytest.MonkeyPatch):
    """pytest's ``MonkeyPatch`` that also forgets every launch-replay plan (``_core/replay.py``) whenever it patches
    or restores something: a plan's key holds the environment but not module switches (``bwd.CTX_SPLIT``, a spy on
    ``bwd.ctx_split``, ...), which tests patch between two calls with the same inputs."""


def _clearing(name):
    def method(self, *args, **kwargs):
        getattr(pytest.MonkeyPatch, name)(self, *args, **kwargs)
        from jagattn._core import replay

        replay.clear()

    return method


for _name in ("setattr", "delattr", "setitem", "setenv", "delenv", "undo"):
    setattr(_ReplayClearingMonkeyPatch, _name, _clearing(_name))


@pytest.fixture
def monkeypatch():
    """See ``_ReplayClearingMonkeyPatch`` (replaces pytest's own fixture of this name)."""
    mp = _ReplayClearingMonkeyPatch()
    yield mp
    mp.undo()


@pytest.fixture(autouse=True)
def _fresh_replay_plans():
    """Every test starts without launch-replay plans (a module switch a previous test patched is restored)."""
    from jagattn._core import replay

    replay.clear()
    yield


@pytest.fixture
def chunked_fp32(monkeypatch):
    """Keep fp32 inputs without gradients on the chunked gated delta kernels, which the backend otherwise sends to
    the token loop (``gated_delta.backends.FP32_RECURRENT``, session 35): for the modules that test the chunked
    kernels (``pytestmark = pytest.mark.usefixtures("chunked_fp32")``)."""
    from jagattn.gated_delta import backends

    monkeypatch.setattr(backends, "FP32_RECURRENT", False)


@pytest.fixture
def device():
    return "cuda" if torch.cuda.is_available() else "cpu"


def wrap_triton_or_kernel(real, kernel):
    """``real(kernel)`` (torch's ``wrap_triton``, saved by a test that stands in for it), or the kernel itself where
    torch 2.11 refuses the interpreter's kernels (as ``_core/launch._plain`` does; 2.13 returns them as they are)."""
    try:
        return real(kernel)
    except RuntimeError:
        if type(kernel).__name__ != "InterpretedFunction":
            raise
        return kernel


@pytest.fixture
def on_launch(monkeypatch):
    """``on_launch(hook)`` replaces ``torch.library.wrap_triton`` so that ``hook(kernel, args, kwargs)``
    sees every Triton launch of the package (which all go through ``wrap_triton(kernel)[grid](...)``)
    before it runs; undone at the end of the test."""

    def install(hook):
        real = torch.library.wrap_triton

        def wrap(kernel):
            wrapped = wrap_triton_or_kernel(real, kernel)

            class _Grid:
                def __getitem__(self, grid):
                    launch = wrapped[grid]

                    def run(*args, **kwargs):
                        hook(kernel, args, kwargs)
                        return launch(*args, **kwargs)

                    return run

            return _Grid()

        monkeypatch.setattr(torch.library, "wrap_triton", wrap)
        # every launch through wrap_triton, as the hook expects: the eager fast launch (_core/launch.py) and
        # launch replay (_core/replay.py: its replayed launches skip wrap_triton) off (the direct plain launch,
        # launch.DIRECT, calls a replaced wrap_triton anyway)
        monkeypatch.setenv("JAGATTN_FAST_LAUNCH", "0")
        monkeypatch.setenv("JAGATTN_LAUNCH_REPLAY", "0")

    return install


FUZZ_SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "fuzz_spec_rule.py"


def load_fuzz_script():
    """A fresh module object of ``benchmarks/fuzz_spec_rule.py`` (the random SPEC-rule fuzz): each test
    module gets its own, so one module's settings (e.g. ``ROUNDED_GRADS``) never leak into another's."""
    spec = importlib.util.spec_from_file_location("fuzz_spec_rule", FUZZ_SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["fuzz_spec_rule"] = mod  # as an import would register it
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def fuzz():
    """The fuzz script, loaded once per test module (``load_fuzz_script``)."""
    return load_fuzz_script()
