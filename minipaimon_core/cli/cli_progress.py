"""The command line's progress bar (minipaimon_core.cli.cli)."""

from __future__ import annotations

from typing import TextIO


class ProgressBar:
    """A one-line progress bar on a stream: ``phase [#####-----] 5/10``."""

    WIDTH = 30

    def __init__(self, stream: TextIO, enabled: bool) -> None:
        self._stream = stream
        self._enabled = enabled
        self._drawn = False
        self._last = ""

    def __call__(self, phase: str, done: int, total: int) -> None:
        if not self._enabled:
            return
        if total > 0:
            filled = self.WIDTH * min(done, total) // total
            line = f"{phase:<18} [{'#' * filled}{'-' * (self.WIDTH - filled)}] {done}/{total}"
        else:
            line = f"{phase:<18} {done}"
        if line != self._last:
            self._stream.write("\r" + line.ljust(len(self._last)))
            self._stream.flush()
            self._last, self._drawn = line, True

    def close(self) -> None:
        if self._drawn:
            self._stream.write("\n")
            self._stream.flush()
            self._drawn, self._last = False, ""


__all__ = ["ProgressBar"]
