"""A progress display: a rich progress bar on a terminal, plain lines otherwise.

rich is an optional import (the ``bench`` extra); without it, or when stderr is not a terminal
(logs on the GPU machine), each step is one line on stderr so long autotuning is never silent.
"""

from __future__ import annotations

import sys
import time
from typing import Any


class Progress:
    def __init__(self, total: int, *, enabled: bool = True, use_rich: bool | None = None) -> None:
        self.total = total
        self.done = 0
        self.enabled = enabled
        self.t0 = time.perf_counter()
        self._rich: Any = None
        self._task: Any = None
        if not enabled:
            return
        if use_rich is None:
            use_rich = sys.stderr.isatty()
        if use_rich:
            try:
                from rich.console import Console
                from rich.progress import (
                    BarColumn,
                    MofNCompleteColumn,
                    TextColumn,
                    TimeElapsedColumn,
                )
                from rich.progress import Progress as RichProgress

                self._rich = RichProgress(
                    TextColumn("[bold]{task.description}"),
                    BarColumn(),
                    MofNCompleteColumn(),
                    TimeElapsedColumn(),
                    console=Console(stderr=True),
                    transient=False,
                )
            except ImportError:
                self._rich = None

    def __enter__(self) -> Progress:
        if self._rich is not None:
            self._rich.__enter__()
            self._task = self._rich.add_task("bench", total=self.total)
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._rich is not None:
            self._rich.__exit__(*exc)

    def status(self, text: str) -> None:
        """What is running now (does not advance the bar)."""
        if not self.enabled:
            return
        if self._rich is not None:
            self._rich.update(self._task, description=text)
        else:
            print(
                f"[{self.done}/{self.total} {time.perf_counter() - self.t0:6.1f}s] {text}",
                file=sys.stderr,
                flush=True,
            )

    def advance(self, n: int = 1) -> None:
        self.done += n
        if self._rich is not None:
            self._rich.update(self._task, advance=n)

    def log(self, text: str) -> None:
        """A line that stays (a failure, a skipped row)."""
        if not self.enabled:
            return
        if self._rich is not None:
            self._rich.console.print(text, markup=False, highlight=False)
        else:
            print(text, file=sys.stderr, flush=True)
