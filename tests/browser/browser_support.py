"""What the Workbench browser tests and their fixtures share (issue 9)."""

from __future__ import annotations

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
HOSTILE_ID = "hostile"


def screenshot(page, name: str) -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path
