"""The SM clock and the software power cap while each phase is timed (``nvidia-smi`` in the background).

Why (session 44, H200): the HSTU backward rows moved 1.35-1.60x between machines with the same kernels. Sampling the
clock showed our kernels timed under the GPU's software power cap at ~1650 MHz where the peer's ran at ~1965-1980
(they draw less power per unit of time because they do the same work more slowly), and the first forward of a cool
GPU at 1980. So a speedup measured on one machine carries that machine's power behaviour; the table prints the
clock each implementation's phases ran at, and the JSON keeps it per phase, so that a reader can tell.

How: one ``nvidia-smi --query-gpu=timestamp,clocks.sm,<sw power cap reason> -lms 20`` process per bench process,
writing to a temporary file (no pipe to fill, no thread in this process to compete with a host-bound timing for
the interpreter); the harness records each timed phase's wall-clock window; at the end every window gets the
median / minimum SM clock of the samples inside it and the fraction of them with the software power cap active.
Nothing runs where ``nvidia-smi`` is missing, on a CPU, when the GPU cannot be named for ``nvidia-smi -i``, or with
``JAGATTN_BENCH_CLOCKS=0``; the entries then carry no clock.
"""

from __future__ import annotations

import datetime
import os
import shutil
import statistics
import subprocess
import tempfile
from typing import Any

import torch

from .._core.env import env_flag

_REASON_FIELDS = ("clocks_event_reasons.sw_power_cap", "clocks_throttle_reasons.sw_power_cap")
WINDOWS = "clock_windows"  # entry key: {phase: [wall-clock start, end]} until ``Sampler.fill``


def _gpu_id(device: torch.device) -> str | None:
    """What ``nvidia-smi -i`` calls this device: its PCI bus id, or its index where no device is hidden."""
    index = device.index if device.index is not None else torch.cuda.current_device()
    props = torch.cuda.get_device_properties(index)
    dom, bus, dev = (getattr(props, a, None) for a in ("pci_domain_id", "pci_bus_id", "pci_device_id"))
    if None not in (dom, bus, dev):
        return f"{dom:08X}:{bus:02X}:{dev:02X}.0"
    if not os.environ.get("CUDA_VISIBLE_DEVICES"):
        return str(index)
    return None


class Sampler:
    """Background ``nvidia-smi`` sampling for one bench process (``start`` / ``fill``); inert where unavailable."""

    def __init__(self, interval_ms: int = 20) -> None:
        self.interval_ms = interval_ms
        self._proc: subprocess.Popen | None = None
        self._file = None
        self.why_not: str | None = None

    def start(self, device: torch.device) -> Sampler:
        """Start sampling the GPU of ``device``; on any failure no sampling (``why_not`` says why).
        ``JAGATTN_BENCH_CLOCKS=0`` turns it off (a bad value raises, naming the variable)."""
        if not env_flag("JAGATTN_BENCH_CLOCKS", True):
            self.why_not = "JAGATTN_BENCH_CLOCKS=0"
            return self
        try:
            return self._start(device)
        except Exception as exc:  # a bench must never fail for want of clock readings
            self.why_not = f"{type(exc).__name__}: {exc}"[:300]
            self._proc = self._file = None
            return self

    def _start(self, device: torch.device) -> Sampler:
        if device.type != "cuda":
            self.why_not = "not a CUDA device"
            return self
        smi = shutil.which("nvidia-smi")
        if smi is None:
            self.why_not = "no nvidia-smi on PATH"
            return self
        gpu = _gpu_id(device)
        if gpu is None:
            self.why_not = "the GPU's PCI bus id is unknown and CUDA_VISIBLE_DEVICES renumbers the GPUs"
            return self
        for reason in _REASON_FIELDS:  # the field's name changed with driver 535
            probe = subprocess.run(
                [smi, "-i", gpu, f"--query-gpu={reason}", "--format=csv,noheader"],
                capture_output=True,
                text=True,
                timeout=30,
            )
            if probe.returncode == 0:
                break
        else:
            self.why_not = f"nvidia-smi knows no power-cap reason field ({probe.stderr.strip()[:200]})"
            return self
        self._file = tempfile.TemporaryFile(mode="w+")  # noqa: SIM115 - open until fill() reads it
        self._proc = subprocess.Popen(
            [smi, "-i", gpu, f"--query-gpu=timestamp,clocks.sm,{reason}", "--format=csv,noheader,nounits"]
            + ["-lms", str(self.interval_ms)],
            stdout=self._file,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        return self

    def _samples(self) -> list[tuple[float, float, bool]]:
        """Stop ``nvidia-smi`` and read its samples: (wall-clock seconds, SM MHz, power cap active)."""
        if self._proc is None or self._file is None:
            return []
        self._proc.terminate()
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:  # pragma: no cover - a hung nvidia-smi
            self._proc.kill()
        self._file.seek(0)
        text = self._file.read()
        self._file.close()
        self._proc = self._file = None
        return parse(text)

    def fill(self, rows: list[dict[str, Any]]) -> None:
        """Replace every entry's phase windows by the clock summary of the samples inside them (or drop them)."""
        samples = self._samples()
        for row in rows:
            for e in (row.get("impls") or {}).values():
                windows = e.pop(WINDOWS, None)
                if not windows or not samples:
                    continue
                clock = {ph: summarize(samples, t0, t1) for ph, (t0, t1) in windows.items()}
                e["clock"] = {ph: c for ph, c in clock.items() if c is not None}


def parse(text: str) -> list[tuple[float, float, bool]]:
    """``timestamp, clocks.sm, reason`` lines (``2026/11/28 08:05:37.620, 1980, Not Active``) as tuples; lines that
    do not parse (``[N/A]``, a cut last line) are skipped."""
    out = []
    for line in text.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) != 3:
            continue
        try:
            t = datetime.datetime.strptime(parts[0], "%Y/%m/%d %H:%M:%S.%f").timestamp()
            mhz = float(parts[1])
        except ValueError:
            continue
        out.append((t, mhz, parts[2] == "Active"))
    return out


def summarize(samples: list[tuple[float, float, bool]], t0: float, t1: float) -> dict[str, Any] | None:
    """Median / minimum SM MHz and the power-capped fraction of the samples in ``[t0, t1]``; None without any."""
    inside = [s for s in samples if t0 <= s[0] <= t1]
    if not inside:
        return None
    mhz = [s[1] for s in inside]
    return {
        "sm_mhz_median": statistics.median(mhz),
        "sm_mhz_min": min(mhz),
        "power_capped": sum(s[2] for s in inside) / len(inside),
        "samples": len(inside),
    }


def describe(clock: dict[str, Any]) -> str:
    """One line for the table: per phase the median SM clock, the lowest sample and the power-capped share."""
    parts = [
        f"{ph} {c['sm_mhz_median']:.0f} MHz (min {c['sm_mhz_min']:.0f}, power-capped {c['power_capped']:.0%})"
        for ph, c in clock.items()
    ]
    return "SM clock while timed: " + "; ".join(parts) if parts else ""
