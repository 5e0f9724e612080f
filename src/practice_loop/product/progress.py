"""A progress line for long commands (``run``, ``verify``, Workbench's start-up check).

On a terminal the line is rewritten in place; under ``CI=true`` a plain line is printed every
``PLAIN_EVERY_SECONDS``, so a CI log shows that a long step is alive without a flood of
lines; anywhere else, and with ``--quiet``, nothing is printed.
"""

from __future__ import annotations

import os
import sys
import time
from typing import TextIO

PLAIN_EVERY_SECONDS = 10.0
_TERMINAL_EVERY_SECONDS = 0.2


class Progress:
    def __init__(self, label: str, *, quiet: bool = False, stream: TextIO | None = None) -> None:
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self.in_place = not quiet and self.stream.isatty()
        self.plain = not quiet and not self.in_place and os.environ.get("CI") == "true"
        self._started = self._shown = time.monotonic()
        self._drawn = False
        self._last: tuple[int, int | None] | None = None

    @property
    def enabled(self) -> bool:
        return self.in_place or self.plain

    def update(self, done: int, total: int | None, detail: str = "") -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        every = _TERMINAL_EVERY_SECONDS if self.in_place else PLAIN_EVERY_SECONDS
        if (done, total) == self._last or (now - self._shown < every and done != total):
            return
        self._shown, self._last = now, (done, total)
        of = f"/{total}" if total is not None else ""
        text = f"{self.label}: {done}{of}"
        if total:
            text += f" ({100 * done // total}%)"
        text += f", {now - self._started:.0f} s" + (f"; {detail}" if detail else "")
        if self.in_place:
            self.stream.write(f"\r\x1b[K{text}")
            self._drawn = True
        else:
            self.stream.write(text + "\n")
        self.stream.flush()

    def finish(self) -> None:
        if self._drawn:
            self.stream.write("\n")
            self.stream.flush()
            self._drawn = False
