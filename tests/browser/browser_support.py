"""What the Workbench browser tests and their fixtures share (issue 9)."""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

# Screenshots of every page a test visits, for people to look at (tests/README.md).
SCREENSHOTS = Path(__file__).resolve().parents[2] / "test-output" / "workbench"
# Headless, and nothing that reaches the network or writes a profile beyond the test's own.
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
# A question that would run script twice over if it were ever interpreted as markup.
HOSTILE_QUESTION = (
    '<script>window.__pwned = 1; document.title = "pwned"</script>Mia has 7 stickers. '
    "She buys 4 more stickers. How many stickers does Mia have now? "
    '<img src=x onerror="window.__pwned=2">'
)
HOSTILE_ID = "hostile"
FORGED_CASE = "s11"  # answered through practice: its trace holds "value":7


def screenshot(page, name: str) -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


def trace_of(store: Path, case_id: str) -> str:
    with contextlib.closing(sqlite3.connect(store)) as db:
        (trace_id,) = db.execute(
            "SELECT trace_id FROM cases WHERE case_id = ?", (case_id,)
        ).fetchone()
    return trace_id
