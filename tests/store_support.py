"""What the store tests share (tests/cover/test_store_opening.py, the shell corpus)."""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


@contextlib.contextmanager
def immutable(path: Path) -> Iterator[None]:
    """``path`` that not even root may write: ``chattr +i`` as root (root ignores file modes),
    else mode 0444; skipped, naming the cause, where the file system has no immutable flag."""
    if os.geteuid() == 0:
        made = subprocess.run(["chattr", "+i", str(path)], capture_output=True, text=True)
        if made.returncode != 0:
            pytest.skip(f"chattr +i is not available here: {made.stderr.strip()}")
        try:
            yield
        finally:
            subprocess.run(["chattr", "-i", str(path)], check=True)
    else:
        path.chmod(0o444)
        try:
            yield
        finally:
            path.chmod(0o644)
