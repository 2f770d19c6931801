"""Optional peer adapters. Each imports its library lazily and reports ``n/a (reason)`` when missing.

- ``torch_varlen`` (attention): ``torch.nn.attention.varlen.varlen_attn`` (FlashAttention-2 kernels
  inside torch). Causal is ``window_size=(-1, 0)``; on torch versions without ``enable_gqa``,
  K/V are expanded to the query heads inside the timed function (part of the peer's cost).
- ``flex`` (attention): ``torch.compile(flex_attention)`` with a document mask built by
  ``create_block_mask`` once per row (outside the timed region), GQA via ``enable_gqa``.
- ``flash_attn`` (attention): ``flash_attn.flash_attn_varlen_func`` if the package is installed.
- ``fla`` (gated_delta): ``fla.ops.gated_delta_rule.chunk_gated_delta_rule`` (fla-core). On
  Hopper with Triton < 3.7.1 it refuses its gated backward (a Triton miscompile, upstream
  issue 640); for timing the guard is bypassed and the column is labelled ``unverified``. Its
  correctness is still checked against jagattn's reference like every other column.
- ``gr_triton`` (hstu): generative-recommenders' ``triton_hstu_mha`` (not on PyPI: put the
  files listed in BENCHMARKS.md on ``PYTHONPATH``), with ``set_use_runtime_max_seq_len(True)``.
  Its autotune lists are restricted before first use (:func:`restrict_gr_configs`) by the
  exclusion rules in ``JAGATTN_GR_EXCLUDE`` (default :data:`GR_EXCLUDE_DEFAULT`), and the column is
  labelled with what was excluded and why (``benchmarks/hstu_gr_probe.py`` found the configs).
"""

from __future__ import annotations

import functools
import inspect
import os
import sys
from pathlib import Path

import torch

from .cases import Problem
from .impls import Impl, Prepared, Unavailable, register_peer

_HALF = (torch.float16, torch.bfloat16)


def _need_cuda(p: Problem) -> None:
    if p.device.type != "cuda":
        raise Unavailable(f"needs a CUDA device (this run is on {p.device.type})")


def _need_half(p: Problem) -> None:
    if p.dtype not in _HALF:
        raise Unavailable(f"dtype {p.dtype} not supported (fp16/bf16 only)")


def _import_error(fn) -> str | None:
    try:
        fn()
    except Exception as exc:
        return f"not importable: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}".rstrip(
            ": "
        )
    return None


# ---------------------------------------------------------------------------------------------
# attention


class TorchVarlen(Impl):
    name = "torch_varlen"
    family = "attention"

    def unavailable_reason(self) -> str | None:
        return _import_error(
            lambda: __import__("torch.nn.attention.varlen", fromlist=["varlen_attn"]).varlen_attn
        )

    def version(self) -> str:
        return f"torch {torch.__version__}"

    def prepare(self, p: Problem) -> Prepared:
        why = self.unavailable_reason()
        if why:
            raise Unavailable(why)
        _need_cuda(p)
        _need_half(p)
        from torch.nn.attention.varlen import varlen_attn

        params = inspect.signature(varlen_attn).parameters
        pr = p.params
        left, right = pr["window"]
        if pr["causal"]:
            right = 0
        kwargs = {}
        if "window_size" in params:
            kwargs["window_size"] = (left, right)
        elif "is_causal" in params and left < 0 and right in (-1, 0):
            kwargs["is_causal"] = right == 0
        else:
            raise Unavailable(
                f"torch {torch.__version__} varlen_attn has no window_size for window ({left},{right})"
            )
        group = pr["hq"] // pr["hkv"]
        native_gqa = "enable_gqa" in params
        if group > 1 and native_gqa:
            kwargs["enable_gqa"] = True
        cu = p.cu(torch.int32)
        mx = max(p.lengths, default=0)
        note = ""
        if group > 1 and not native_gqa:
            note = f"K/V expanded {group}x to Hq inside the timed call (no enable_gqa in torch {torch.__version__})"

        def fn(t):
            k, v = t["k"], t["v"]
            if group > 1 and not native_gqa:
                k = k.repeat_interleave(group, dim=1)
                v = v.repeat_interleave(group, dim=1)
            return varlen_attn(t["q"], k, v, cu, cu, mx, mx, **kwargs)

        return Prepared(fn, note=note)


@functools.lru_cache(maxsize=1)
def _compiled_flex():
    from torch.nn.attention.flex_attention import flex_attention

    # Every row brings a new mask_mod closure and shapes: each is a recompile. The default limit
    # (8) would silently drop later rows to eager flex_attention, which is not the peer.
    cfg = torch._dynamo.config
    for knob in (
        "recompile_limit",
        "cache_size_limit",
        "accumulated_recompile_limit",
        "accumulated_cache_size_limit",
    ):
        if hasattr(cfg, knob):
            setattr(cfg, knob, max(getattr(cfg, knob), 256))
    return torch.compile(flex_attention, dynamic=False)


@functools.cache
def _document_mask_mod(left: int, right: int, total: int, device: torch.device):
    """One mask_mod function (and document-id buffer) per window and size: a new function object
    per row would make torch.compile recompile flex_attention for every row."""
    doc = torch.zeros(total, dtype=torch.int64, device=device)

    # Self-attention with equal q/k offsets: bottom-right alignment is plain q_idx - kv_idx.
    def mask_mod(b, h, q_idx, kv_idx):
        m = doc[q_idx] == doc[kv_idx]
        if right >= 0:
            m = m & (kv_idx - q_idx <= right)
        if left >= 0:
            m = m & (q_idx - kv_idx <= left)
        return m

    return mask_mod, doc


class Flex(Impl):
    name = "flex"
    family = "attention"

    def unavailable_reason(self) -> str | None:
        return _import_error(
            lambda: __import__("torch.nn.attention.flex_attention", fromlist=["flex_attention"])
        )

    def version(self) -> str:
        return f"torch {torch.__version__}"

    def prepare(self, p: Problem) -> Prepared:
        why = self.unavailable_reason()
        if why:
            raise Unavailable(why)
        _need_cuda(p)
        _need_half(p)
        from torch.nn.attention.flex_attention import create_block_mask

        pr = p.params
        left, right = pr["window"]
        if pr["causal"]:
            right = 0
        t_total = p.tokens
        lengths = torch.tensor(p.lengths, device=p.device)
        doc = torch.repeat_interleave(torch.arange(len(p.lengths), device=p.device), lengths)
        mask_mod, doc_buf = _document_mask_mod(left, right, t_total, p.device)
        doc_buf.copy_(doc)  # rows run one after another: the shared buffer holds this row's documents

        kw = {}
        if "_compile" in inspect.signature(create_block_mask).parameters:
            kw["_compile"] = True  # avoids materialising a [T, T] mask at 32k tokens
        block_mask = create_block_mask(mask_mod, None, None, t_total, t_total, device=p.device, **kw)
        flex = _compiled_flex()
        gqa = pr["hq"] != pr["hkv"]

        def fn(t):
            q, k, v = (x.transpose(0, 1).unsqueeze(0) for x in (t["q"], t["k"], t["v"]))
            o = flex(q, k, v, block_mask=block_mask, enable_gqa=gqa)
            return o[0].transpose(0, 1)

        return Prepared(fn, note="document mask built once per row by create_block_mask (not timed)")


class FlashAttn(Impl):
    name = "flash_attn"
    family = "attention"

    def unavailable_reason(self) -> str | None:
        return _import_error(lambda: __import__("flash_attn").flash_attn_varlen_func)

    def version(self) -> str:
        try:
            import flash_attn

            return f"flash_attn {flash_attn.__version__}"
        except Exception:
            return ""

    def prepare(self, p: Problem) -> Prepared:
        why = self.unavailable_reason()
        if why:
            raise Unavailable(why)
        _need_cuda(p)
        _need_half(p)
        from flash_attn import flash_attn_varlen_func

        pr = p.params
        cu = p.cu(torch.int32)
        mx = max(p.lengths, default=0)
        causal = pr["causal"]
        window = tuple(pr["window"]) if not causal else (pr["window"][0], 0)

        def fn(t):
            return flash_attn_varlen_func(
                t["q"], t["k"], t["v"], cu, cu, mx, mx, causal=causal, window_size=window
            )

        return Prepared(fn)


# ---------------------------------------------------------------------------------------------
# gated delta


def _triton_version() -> tuple[int, ...]:
    import triton

    return tuple(int(x) for x in triton.__version__.split("+")[0].split(".")[:3] if x.isdigit())


class Fla(Impl):
    name = "fla"
    family = "gated_delta"

    def unavailable_reason(self) -> str | None:
        return _import_error(
            lambda: __import__("fla.ops.gated_delta_rule", fromlist=["x"]).chunk_gated_delta_rule
        )

    def version(self) -> str:
        try:
            from importlib.metadata import version

            return f"fla-core {version('fla-core')}"
        except Exception:
            return ""

    def prepare(self, p: Problem) -> Prepared:
        why = self.unavailable_reason()
        if why:
            raise Unavailable(why)
        _need_cuda(p)
        from fla.ops.gated_delta_rule import chunk_gated_delta_rule

        label = ""
        note = ""
        hopper = torch.cuda.get_device_capability(p.device)[0] == 9
        if hopper and _triton_version() < (3, 7, 1):
            import fla.ops.common.chunk_o as chunk_o

            if not getattr(chunk_o, "TRITON_ABOVE_3_7_1", True):
                chunk_o.TRITON_ABOVE_3_7_1 = True
            label = "unverified"
            note = (
                "FLA refuses its gated backward on Hopper with Triton < 3.7.1 (upstream issue 640); "
                "guard bypassed for timing (fla.ops.common.chunk_o.TRITON_ABOVE_3_7_1 = True)"
            )
        cu = p.cu(torch.int64)

        def fn(t):
            o, _ = chunk_gated_delta_rule(
                t["q"][None], t["k"][None], t["v"][None], t["g"][None], t["beta"][None],
                cu_seqlens=cu, use_qk_l2norm_in_kernel=True, output_final_state=False,
            )  # fmt: skip
            return o[0]

        return Prepared(fn, label=label, note=note)


# ---------------------------------------------------------------------------------------------
# hstu

#: Exclusion rules applied to GR's autotune lists (``JAGATTN_GR_EXCLUDE`` overrides; "" = none).
#: Syntax: comma-separated ``<fwd|bwd>:<field>=<int>[/<field>=<int>...]`` with fields ``m`` BLOCK_M,
#: ``n`` BLOCK_N, ``w`` num_warps, ``s`` num_stages, ``sp`` SEQUENCE_PARALLEL, ``u`` UNROLL; a config
#: is excluded when it matches every field of one rule.
#: Default: GR's one backward config with ``UNROLL=4`` (BLOCK_M=32, BLOCK_N=128, 8 warps, 2 stages).
#: Alone, in a fresh process with CUDA_LAUNCH_BLOCKING=1, it raised "illegal memory access" in its
#: backward on B=256 N=1024, and GR's unrestricted autotuning died while timing it; the other 19
#: backward and 28 of 29 forward configs passed the bf16 gate (one forward config needs more shared
#: memory than the H200 has, which GR's autotuner skips by itself). H200, torch 2.11.0+cu130,
#: Triton 3.6.0, session 3: benchmarks/results/2026-11-21-s3-h200-gr-config-probe.json.
GR_EXCLUDE_DEFAULT = "bwd:u=4"
GR_EXCLUDE_WHY = "illegal memory access on Triton 3.6"
_GR_FIELDS = {"m": "BLOCK_M", "n": "BLOCK_N", "sp": "SEQUENCE_PARALLEL", "u": "UNROLL"}


def gr_config_fields(cfg) -> dict[str, int]:
    """A GR ``triton.Config`` as the ``{m, n, w, s, sp, u}`` fields of the exclusion rules."""
    out = {k: int(cfg.kwargs[v]) for k, v in _GR_FIELDS.items() if v in cfg.kwargs}
    out["w"], out["s"] = int(cfg.num_warps), int(cfg.num_stages)
    return out


def gr_config_name(kind: str, cfg) -> str:
    """``fwd:m=16/n=32/w=2/s=2`` (every field; a valid exclusion rule for exactly this config)."""
    return f"{kind}:" + "/".join(f"{k}={v}" for k, v in gr_config_fields(cfg).items())


def parse_gr_rules(spec: str) -> list[tuple[str, dict[str, int]]]:
    """Parse exclusion rules (see :data:`GR_EXCLUDE_DEFAULT`); ValueError names a bad rule."""
    rules = []
    for rule in (r.strip() for r in spec.split(",")):
        if not rule:
            continue
        kind, _, body = rule.partition(":")
        fields = {}
        for item in body.split("/") if body else []:
            key, _, val = item.partition("=")
            if key not in (*_GR_FIELDS, "w", "s") or not val.lstrip("-").isdigit():
                raise ValueError(f"JAGATTN_GR_EXCLUDE: bad field {item!r} in rule {rule!r}")
            fields[key] = int(val)
        if kind not in ("fwd", "bwd") or not fields:
            raise ValueError(f"JAGATTN_GR_EXCLUDE: bad rule {rule!r} (want fwd|bwd:field=int[/...])")
        rules.append((kind, fields))
    return rules


def restrict_gr_configs(mod, spec: str) -> dict[str, list[str]]:
    """Drop the configs matching ``spec`` from GR's forward and backward autotune lists in ``mod``
    (``generative_recommenders.ops.triton.triton_hstu_attention``); GR's files are not touched.

    Must run before GR's kernels are first called (an autotuner keeps the config it chose per key).
    Idempotent: the full lists are kept on the autotuner the first time. Returns the excluded names
    per kind. Raises ValueError when a rule would leave a list empty.
    """
    rules = parse_gr_rules(spec)
    removed: dict[str, list[str]] = {}
    for kind, tuner in (("fwd", mod._hstu_attn_fwd), ("bwd", mod._hstu_attn_bwd)):
        full = getattr(tuner, "_jagattn_full_configs", None)
        if full is None:
            full = list(tuner.configs)
            tuner._jagattn_full_configs = full
        keep, drop = [], []
        for cfg in full:
            f = gr_config_fields(cfg)
            hit = any(k == kind and all(f.get(x) == v for x, v in r.items()) for k, r in rules)
            (drop if hit else keep).append(cfg)
        if not keep:
            raise ValueError(f"JAGATTN_GR_EXCLUDE={spec!r} excludes every GR {kind} config")
        if len(keep) != len(tuner.configs) or any(
            a is not b for a, b in zip(keep, tuner.configs, strict=True)
        ):
            tuner.configs = keep
            tuner.cache = {}  # a choice made over the old list must not survive
        removed[kind] = [gr_config_name(kind, c) for c in drop]
    return removed


class GrTriton(Impl):
    name = "gr_triton"
    family = "hstu"

    def unavailable_reason(self) -> str | None:
        return _import_error(
            lambda: (
                __import__(
                    "generative_recommenders.ops.triton.triton_hstu_attention", fromlist=["x"]
                ).triton_hstu_mha
            )
        )

    def version(self) -> str:
        sha = os.environ.get("JAGATTN_GR_COMMIT", "")
        if not sha:
            try:
                import generative_recommenders

                f = Path(generative_recommenders.__file__).resolve().parent.parent / "COMMIT"
                sha = f.read_text().strip() if f.exists() else ""
            except Exception:
                sha = ""
        return f"generative-recommenders {sha[:12] or '(commit unknown)'}"

    def prepare(self, p: Problem) -> Prepared:
        why = self.unavailable_reason()
        if why:
            raise Unavailable(why)
        _need_cuda(p)
        _need_half(p)
        from generative_recommenders import common
        from generative_recommenders.ops.triton.triton_hstu_attention import triton_hstu_mha

        common.set_use_runtime_max_seq_len(True)
        spec = os.environ.get("JAGATTN_GR_EXCLUDE", GR_EXCLUDE_DEFAULT)
        removed = restrict_gr_configs(sys.modules[triton_hstu_mha.__module__], spec)
        label = note = ""
        if any(removed.values()):
            label = f"{spec} excluded"
            note = (
                f"GR's autotune lists without {spec} ({GR_EXCLUDE_WHY}; "
                f"benchmarks/hstu_gr_probe.py): {', '.join(sum(removed.values(), []))}"
            )
        pr = p.params
        offs = p.cu(torch.int64)
        nt = p.seq_tensor("num_targets", torch.int64)
        n, alpha, w, c = pr["max_seq_len"], pr["alpha"], pr["window"], pr["contextual"]

        def fn(t):
            return triton_hstu_mha(n, alpha, t["q"], t["k"], t["v"], offs, nt, w, c)

        return Prepared(fn, label=label, note=note)


for _impl in (TorchVarlen(), Flex(), FlashAttn(), Fla(), GrTriton()):
    register_peer(_impl)
