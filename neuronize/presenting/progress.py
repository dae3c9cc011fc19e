"""A one-line progress bar on stderr for long runs: ``files done/total, rate, ETA``.

Shown only when enabled, when the stream is a terminal, and once the run has lasted longer than
``delay`` seconds (a short run prints nothing at all). Redrawn at most every ``interval`` seconds
with a carriage return, and the line is cleared on exit, so nothing of it is left in a terminal
and nothing ever reaches a pipe, a file, JSON or diff output.

    with Progress(len(files), stream=sys.stderr, enabled=not quiet) as progress:
        for result in results:
            progress.advance()
"""

from __future__ import annotations

import time
from typing import TextIO
from collections.abc import Callable

BAR_WIDTH = 24


def _is_tty(stream: TextIO) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


def _duration(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    if seconds >= 60:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds}s"


class Progress:
    """Counts finished files and draws them on ``stream`` (see the module docstring)."""

    def __init__(self, total: int, stream: TextIO | None = None, enabled: bool = True, *,
                 delay: float = 1.5, interval: float = 0.1, label: str = "files",
                 clock: Callable[[], float] = time.monotonic) -> None:
        import sys

        self.total = max(0, int(total))
        self.stream = stream if stream is not None else sys.stderr
        self._wanted = bool(enabled)
        self.enabled = self._wanted and self.total > 0 and _is_tty(self.stream)
        self.delay = delay
        self.interval = interval
        self.label = label
        self._clock = clock
        self.done = 0
        self._start = 0.0
        self._last_draw: float | None = None
        self._width = 0  # length of the last line drawn, to clear it

    def start(self, total: int) -> None:
        """Set the total once it is known (after discovery); the clock keeps running."""
        self.total = max(0, int(total))
        self.enabled = self._wanted and self.total > 0 and _is_tty(self.stream)

    def __enter__(self) -> Progress:
        self._start = self._clock()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def advance(self, n: int = 1) -> None:
        self.done = min(self.total, self.done + n) if self.total else self.done + n
        if not self.enabled:
            return
        now = self._clock()
        if now - self._start < self.delay:
            return
        if self._last_draw is not None and now - self._last_draw < self.interval and self.done < self.total:
            return
        self._draw(now)

    def line(self, now: float | None = None) -> str:
        """The text of the bar at ``now`` (no control characters)."""
        now = self._clock() if now is None else now
        elapsed = max(now - self._start, 1e-9)
        rate = self.done / elapsed
        fraction = self.done / self.total if self.total else 1.0
        filled = int(BAR_WIDTH * fraction)
        bar = "#" * filled + "-" * (BAR_WIDTH - filled)
        if self.done >= self.total:
            eta = "done"
        elif rate > 0:
            eta = "ETA " + _duration((self.total - self.done) / rate)
        else:
            eta = "ETA ?"
        return f"[{bar}] {self.done}/{self.total} {self.label}, {rate:.0f}/s, {eta}"

    def _draw(self, now: float) -> None:
        text = self.line(now)
        pad = " " * max(0, self._width - len(text))
        try:
            self.stream.write("\r" + text + pad)
            self.stream.flush()
        except (OSError, ValueError):
            self.enabled = False
            return
        self._width = len(text)
        self._last_draw = now

    def close(self) -> None:
        """Erase the bar if one was drawn."""
        if self._width and self.enabled:
            try:
                self.stream.write("\r" + " " * self._width + "\r")
                self.stream.flush()
            except (OSError, ValueError):
                pass
        self._width = 0
        self.enabled = False
